import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // The longest access-token lifetime any instance is configured with: how long the row that ends
  // a user's tokens must outlive them. The auth plugin records its own at start.
  await db.schema.createTable('token_lifetime')
    .addColumn('one_row', 'boolean', (c) => c.primaryKey().defaultTo(true).check(sql`one_row`))
    .addColumn('seconds', 'integer', (c) => c.notNull())
    .execute()
  await sql`insert into token_lifetime (seconds) values (86400)`.execute(db)

  // A change of role ends the user's tokens, whoever makes it: the API, an administration tool or
  // plain SQL. A token carries its role, so a demoted administrator's token would otherwise keep
  // an administrator's rights until it expired. Same effect as revokeTokensOf (db/revoked-tokens.ts).
  await sql`
    create function tandem_end_tokens_on_role_change() returns trigger language plpgsql as $$
    begin
      new.token_version := greatest(new.token_version, old.token_version + 1);
      insert into revoked_tokens (jti, expires_at, token_version)
      values ('user:' || new.id, now() + make_interval(secs => (select seconds from token_lifetime)), new.token_version)
      on conflict (jti) do update set
        revoked_at = clock_timestamp(),
        expires_at = greatest(revoked_tokens.expires_at, excluded.expires_at),
        token_version = greatest(revoked_tokens.token_version, excluded.token_version);
      return new;
    end
    $$`.execute(db)
  await sql`
    create trigger users_role_change_ends_tokens before update of role on users
    for each row when (old.role is distinct from new.role)
    execute function tandem_end_tokens_on_role_change()`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists users_role_change_ends_tokens on users`.execute(db)
  await sql`drop function if exists tandem_end_tokens_on_role_change()`.execute(db)
  await db.schema.dropTable('token_lifetime').ifExists().execute()
}
