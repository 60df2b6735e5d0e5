// The bare `ollama` client as a whole process: sends the requests in the JSON file argv[3]
// ([{model, messages, options, format}]) to argv[2], four at a time, streaming, doing nothing
// with the replies. bench/engine.ts runs it beside `conclave run` to compare whole processes.
import { readFileSync } from 'node:fs';
import { Ollama } from 'ollama';
import pLimit from 'p-limit';

const [url, file] = process.argv.slice(2);
const requests = JSON.parse(readFileSync(file, 'utf8'));
const client = new Ollama({ host: url });
const limit = pLimit(4);
await Promise.all(
  requests.map((c) =>
    limit(async () => {
      const stream = await client.chat({ model: c.model, messages: c.messages, options: c.options, ...(c.format ? { format: c.format } : {}), stream: true });
      let content = '';
      for await (const chunk of stream) content += chunk.message.content;
      return content;
    }),
  ),
);
