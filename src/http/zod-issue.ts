/** The part of a zod issue we send in `details`. */
export interface ZodIssue {
  code: string;
  path: (string | number)[];
  message: string;
  [key: string]: unknown;
}
