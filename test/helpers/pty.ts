/** A python3 program that runs a command with stdin, stdout and stderr on a pseudo-terminal and prints what the terminal showed. */
export const ON_A_PTY = `
import os, pty, subprocess, sys
master, slave = pty.openpty()
child = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave, close_fds=True)
os.close(slave)
shown = b''
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        break
    if not data:
        break
    shown += data
sys.stdout.buffer.write(shown)
sys.exit(child.wait())
`;
