import { createHmac } from 'node:crypto'
import t from 'tap'
import { hmacBase64url } from '../../db/hmac.js'

t.test('the cursor MAC is HMAC-SHA256 for any secret and message', async (t) => {
  const secrets = ['k', 'pagination-test-secret', 'x'.repeat(64), 'y'.repeat(65), 'é'.repeat(40), '🔑'.repeat(30)]
  const messages = ['', 'eyJzIjoiaWQiLCJpIjoyMH0', 'héllo ✓ 😀', 'a'.repeat(341), 'b'.repeat(342), 'ü'.repeat(600), 'c'.repeat(5000)]
  for (const secret of secrets) {
    for (const message of messages) {
      const expected = createHmac('sha256', secret).update(message).digest('base64url')
      t.equal(hmacBase64url(secret, message), expected, `secret of ${secret.length} chars, message of ${message.length}`)
    }
  }
  // A short message after a long one: nothing of the longer one may be left in the signature.
  t.equal(hmacBase64url('k', 'short'), createHmac('sha256', 'k').update('short').digest('base64url'))
})
