// Form fields of a webhook body (urlencoded or multipart), collected into an object: a name sent once is a
// string, a name sent again becomes an array of its values in order. Anyone holding a webhook URL can send
// these, so collecting stays linear (an array copied at each repeat made a 234 KB body of one repeated name
// hold the event loop 27 s), the count is bounded, and a `__proto__` name is dropped as in JSON bodies.

/** Form fields one webhook body may carry (its other bound is the 10 MiB body limit). */
export const MAX_FORM_FIELDS = 10_000;

/** More fields than MAX_FORM_FIELDS: the route answers 413. */
export class TooManyFields extends Error {
  constructor() {
    super(`A form body may carry at most ${MAX_FORM_FIELDS} fields`);
  }
}

export class FormFields {
  private readonly out: Record<string, unknown> = {};
  /** The arrays of repeated names, appended to in place. */
  private readonly repeated = new Map<string, string[]>();
  private count = 0;

  add(name: string, value: string): void {
    if (++this.count > MAX_FORM_FIELDS) throw new TooManyFields();
    if (name === '__proto__') return;
    const list = this.repeated.get(name);
    if (list) {
      list.push(value);
    } else if (Object.hasOwn(this.out, name)) {
      const values = [this.out[name] as string, value];
      this.repeated.set(name, values);
      this.out[name] = values;
    } else {
      this.out[name] = value;
    }
  }

  get fields(): Record<string, unknown> {
    return this.out;
  }
}
