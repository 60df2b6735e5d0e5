/** One benchmark item, as written on each line of a suite file (validated by `suiteItemSchema` in suite.ts). */
export interface SuiteItem {
  id: string;
  question: string;
  answer: string;
  choices?: string[] | undefined;
  kind: 'number' | 'choice' | 'text';
}
