import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // The longest access-token lifetime any instance is configured with: how long a row that ends a
  // user's tokens must outlive them. The auth plugin records its own at start; the first value
  // stands in until then (an instance of an older version, during a rolling deploy).
  await db.schema.createTable('token_lifetime')
    .addColumn('one_row', 'boolean', (c) => c.primaryKey().defaultTo(true).check(sql`one_row`))
    .addColumn('seconds', 'integer', (c) => c.notNull())
    .execute()
  await sql`insert into token_lifetime (seconds) values (86400)`.execute(db)

  // A change of role, and the deletion of a user, end the user's tokens whoever makes them: the API,
  // an administration tool or plain SQL. A token carries its role, so a demoted administrator's
  // token would otherwise keep an administrator's rights until it expired.
  // The version is raised with the change; the row that tells every instance is written when the
  // transaction commits (a deferred trigger), so its `revoked_at` is the commit's time however long
  // the transaction was open, and the instances' polls (which read rows by `revoked_at`) see it.
  await sql`
    create function tandem_raise_token_version() returns trigger language plpgsql as $$
    begin
      new.token_version := greatest(new.token_version, old.token_version + 1);
      return new;
    end
    $$`.execute(db)
  await sql`
    create trigger users_role_change_raises_token_version before update of role on users
    for each row when (old.role is distinct from new.role)
    execute function tandem_raise_token_version()`.execute(db)
  // The expiry is compared with the API's clock: an hour more than the lifetime keeps a slow or
  // fast database clock from ending the row before the tokens it ends.
  await sql`
    create function tandem_end_tokens() returns trigger language plpgsql as $$
    declare
      ended bigint := case when tg_op = 'DELETE' then old.id else new.id end;
      below integer := case when tg_op = 'DELETE' then old.token_version + 1 else new.token_version end;
    begin
      insert into revoked_tokens (jti, expires_at, token_version)
      values ('user:' || ended, clock_timestamp() + make_interval(secs => (select seconds from token_lifetime)) + interval '1 hour', below)
      on conflict (jti) do update set
        revoked_at = clock_timestamp(),
        expires_at = greatest(revoked_tokens.expires_at, excluded.expires_at),
        token_version = greatest(revoked_tokens.token_version, excluded.token_version);
      return null;
    end
    $$`.execute(db)
  await sql`
    create constraint trigger users_role_change_ends_tokens after update of role on users
    deferrable initially deferred
    for each row when (old.role is distinct from new.role)
    execute function tandem_end_tokens()`.execute(db)
  await sql`
    create constraint trigger users_deletion_ends_tokens after delete on users
    deferrable initially deferred
    for each row execute function tandem_end_tokens()`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists users_deletion_ends_tokens on users`.execute(db)
  await sql`drop trigger if exists users_role_change_ends_tokens on users`.execute(db)
  await sql`drop trigger if exists users_role_change_raises_token_version on users`.execute(db)
  await sql`drop function if exists tandem_end_tokens()`.execute(db)
  await sql`drop function if exists tandem_raise_token_version()`.execute(db)
  await db.schema.dropTable('token_lifetime').ifExists().execute()
}
