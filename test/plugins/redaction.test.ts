// What the log and the spans redact alike (plugins/redaction.ts): secret-looking query parameters,
// and errors told by their code, never their message.
import { GraphQLError } from 'graphql'
import t from 'tap'
import { errorClass, errorCode, redactQuery, redactUrl, splitUrl } from '../../plugins/redaction.js'
import { TandemError } from '../../schema/errors.js'

t.test('secret-looking query parameters lose their values; the others keep theirs', async (t) => {
  const secretNames = ['password', 'current_password', 'newPassword', 'passwd', 'pwd', 'token', 'access_token', 'refresh_token', 'id_token',
    'secret', 'client_secret', 'api_key', 'apiKey', 'api-key', 'key', 'Authorization', 'signature', 'sig', 'X-Amz-Credential', 'code', 'query', 'variables']
  for (const name of secretNames) t.equal(redactQuery(`${name}=hunter2`), `${name}=[redacted]`, name)
  t.equal(redactQuery('pass%77ord=hunter2&to%6Ben=hunter2'), 'pass%77ord=[redacted]&to%6Ben=[redacted]', 'names are compared decoded')
  t.equal(redactQuery('q=visible&limit=5&cursor=abc&sort=-id&flag'), 'q=visible&limit=5&cursor=abc&sort=-id&flag', 'other parameters are kept')
  t.equal(redactUrl('/graphql?query=%7B%20login%7D&operationName=A'), '/graphql?query=[redacted]&operationName=A')
  t.equal(redactUrl('/api/v1/users'), '/api/v1/users')
  t.same(splitUrl('/api/v1/products?token=hunter2&q=x'), { path: '/api/v1/products', query: 'token=[redacted]&q=x' })
  t.same(splitUrl('/health'), { path: '/health', query: undefined })
})

t.test('an error is told by its code, else its class, never its message', async (t) => {
  const quoting = 'Variable "$i" got invalid value { password: "hunter2" }'
  t.equal(errorCode(new GraphQLError(quoting, { extensions: { code: 'BAD_USER_INPUT' } })), 'BAD_USER_INPUT')
  t.equal(errorCode(new GraphQLError(quoting)), 'GraphQLError')
  t.equal(errorCode(Object.assign(new Error('invalid input syntax for type integer: "hunter2"'), { code: '22P02' })), '22P02')
  t.equal(errorCode(new TandemError('TANDEM_ERR_FORBIDDEN', 'current_password is wrong')), 'TANDEM_ERR_FORBIDDEN')
  t.equal(errorCode(new SyntaxError('Unexpected token o in JSON: "hunter2" oops')), 'SyntaxError')
  t.equal(errorCode({ code: 'a code with "hunter2" in it' }), 'Error', 'a code that is a sentence is not one')
  t.equal(errorCode('hunter2'), 'Error')
  t.equal(errorClass(new GraphQLError(quoting)), 'GraphQLError')
  t.equal(errorClass({ name: quoting }), 'Error')
})
