// The server's standard streams when the terminal it was started at goes away: an SSH session
// that drops, a terminal window closed under `npm start`.
import { closeSync, openSync } from 'node:fs'
import { isatty } from 'node:tty'

/** How often a terminal that went away unannounced (no SIGHUP reached the process) is looked for. */
const CHECK_MS = 1000

/**
 * Notes which of stdin, stdout and stderr are a terminal now, and lets go of those that stop being
 * one: each is pointed at /dev/null once its terminal has gone away (a hung-up terminal fails every
 * request, isatty's with EIO). It looks on exit and every second; the returned function looks at
 * once, for the server to call on SIGHUP (which the kernel sends as a terminal goes) and the other
 * signals that close it, before the log says so. Without a terminal it does nothing.
 *
 * Why: as Node.js 20 exits, it restores the terminal settings it found at start and aborts when it
 * cannot (nodejs/node#51519; Node 24 ignores the failure since nodejs/node#58200), so every exit
 * of a server whose terminal had gone was an abort; Node leaves alone a descriptor that no longer
 * refers to the file it found there. And pino-pretty's worker ends at its first failed write (it
 * lets only EPIPE pass, not a hung-up terminal's EIO), after which every log line is an uncaught
 * error that stops the server: /dev/null takes them, and the server goes on serving.
 * @example const onLostTerminal = watchTerminal(); process.on('SIGHUP', onLostTerminal)
 */
export function watchTerminal (): () => void {
  const terminals = [0, 1, 2].filter((fd) => isatty(fd))
  if (terminals.length === 0) return () => {}
  const check = (): void => {
    for (const fd of [...terminals]) {
      if (isatty(fd)) continue
      terminals.splice(terminals.indexOf(fd), 1)
      if (terminals.length === 0) clearInterval(timer)
      letGo(fd)
    }
  }
  const timer = setInterval(check, CHECK_MS).unref()
  process.on('exit', check)
  return check
}

/** Points `fd` at /dev/null. */
function letGo (fd: number): void {
  try {
    closeSync(fd)
  } catch {
    return // closed already, which Node's exit leaves alone as well
  }
  // Node has no dup2. Closed and opened again at once, the lowest free descriptor is this one,
  // unless another thread opened a file in that instant; then ours is not needed.
  const opened = openSync('/dev/null', fd === 0 ? 'r' : 'w')
  if (opened !== fd) closeSync(opened)
}
