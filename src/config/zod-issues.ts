import type { z } from 'zod';

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(top level)';
      if (issue.code === 'unrecognized_keys') {
        return `  - ${path}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `\`${k}\``).join(', ')}`;
      }
      return `  - ${path}: ${issue.message}`;
    })
    .join('\n');
}
