/** A stand-in for stdout/stderr that keeps what the CLI writes (not a TTY, so output is plain). */
export function capture(columns = 100): NodeJS.WriteStream & { text: string } {
  const stream = {
    text: '',
    isTTY: false,
    columns,
    write(chunk: string | Uint8Array) {
      stream.text += String(chunk);
      return true;
    },
  };
  return stream as unknown as NodeJS.WriteStream & { text: string };
}
