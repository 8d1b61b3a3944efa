/** What one entry of the table of settings (settings.ts) is, and the sections that group them. */

/** How a variable's text becomes a value; `accepts` says so in the documentation. */
export interface ValueKind<T> {
  accepts: string;
  /** Throws ConfigError naming the variable when the text is not a value of this kind. */
  parse(raw: string, name: string): T;
  /** An empty value is a value of its own (the empty list) rather than "unset". */
  emptyIsValue?: boolean;
}

/** The sections of docs/configuration.md, in order. */
export const SECTIONS = {
  service: 'The service',
  storage: 'Storage',
  oauth: 'OAuth and tokens',
  accounts: 'Accounts and mail',
  http: 'HTTP',
  errorReport: 'Error reporting',
  files: 'Files',
} as const;
export type Section = keyof typeof SECTIONS;

/** One environment variable: how it is read, and what the documentation says about it. */
export interface Setting<T = unknown> {
  section: Section;
  /** One line: what the variable sets. Markdown, no links (it is also a comment in .env.example). */
  meaning: string;
  value: ValueKind<T>;
  /** The text read when the variable is unset (or empty); documented as the default. */
  default?: string;
  /** What leaving the variable unset means, documented instead of a plain default. */
  unset?: string;
  /** More for the documentation, Markdown. */
  notes?: string;
  /** A value to show, in the documentation and in .env.example. */
  example?: string;
  /**
   * Set to its example in .env.example, which the compose deployment applies. Every other
   * setting is there too, commented out, showing its example or default.
   */
  envFile?: 'set';
  /** Read by route:list and openapi:generate, which describe the service without running it. */
  describesService?: true;
}
