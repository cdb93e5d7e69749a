import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  ignores: ['dist/**', '.tandem/**', 'node_modules/**', '.data/**', 'coverage/**', '.tap/**']
})
