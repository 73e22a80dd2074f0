// The syntax tree of pure code turned into closures (docs/architecture.md, "Pure code"): pure-code.ts decides
// when code is tried here and what is done with its value; this file decides what is in the subset and what each
// node does. Anything outside the subset throws DECLINE while compiling; anything whose value could depend on a
// built-in throws it while evaluating (pure-builtins.ts holds the reads, calls and the meter).
import { parse, type CallExpression, type Expression, type Identifier, type Literal, type Node, type Property, type SpreadElement, type Statement } from 'acorn';
import {
  ARRAY_METHODS, DECLINE, GLOBAL_FUNCTIONS, Meter, NAMESPACE_CONSTANTS, NAMESPACE_FUNCTIONS, NUMBER_METHODS, STRING_METHODS,
  capped, primitive, readProperty, size, type Builtin,
} from './pure-builtins.js';

/** A slot's value before its declaration ran (the temporal dead zone: reading it throws in JavaScript). */
const UNINITIALIZED = Symbol('uninitialized');
/** What an optional link of a chain yields when its object is null or undefined: the chain is undefined. */
const SHORT_CIRCUIT = Symbol('short-circuit');

interface Evaluation {
  slots: unknown[];
  meter: Meter;
}
type Evaluate = (e: Evaluation) => unknown;
/** A statement: undefined when it completed normally, the value when it returned. */
type Execute = (e: Evaluation) => { value: unknown } | undefined;

/** Compiled code: `run` evaluates it on the inputs in parameter order, or throws (DECLINE, or the code's own error). */
export interface Compiled {
  run(args: readonly unknown[]): unknown;
}

interface Scope {
  names: Map<string, number>;
  parent: Scope | null;
}


/** `code` as the body of a function of `names`, compiled; null when it is outside the subset. */
export function compile(code: string, names: readonly string[]): Compiled | null {
  let program;
  try {
    program = parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true });
  } catch {
    return null;
  }
  const c = new Compiler();
  const params: Scope = { names: new Map(), parent: null };
  for (const n of names) params.names.set(n, c.slotCount++);
  let body: Execute;
  try {
    body = c.block(program.body as Statement[], params, true);
  } catch {
    // Declined; anything else thrown here is a gap in this compiler, and the sandbox is always right.
    return null;
  }
  const slotCount = c.slotCount;
  return {
    run(args) {
      const e: Evaluation = { slots: new Array<unknown>(slotCount).fill(UNINITIALIZED), meter: new Meter() };
      for (let i = 0; i < names.length; i++) e.slots[i] = args[i];
      return body(e)?.value;
    },
  };
}

class Compiler {
  slotCount = 0;

  /** Statements of a block, its `let` and `const` names scoped to it (declared up front, as JavaScript does). */
  block(statements: readonly Statement[], parent: Scope, functionBody = false): Execute {
    const scope: Scope = { names: new Map(), parent };
    for (const s of statements) {
      if (s.type !== 'VariableDeclaration') continue;
      if (s.kind !== 'let' && s.kind !== 'const') throw DECLINE;
      for (const d of s.declarations) {
        if (d.id.type !== 'Identifier') throw DECLINE;
        const name = d.id.name;
        // A name declared twice, or a parameter redeclared in the function's own block, is a SyntaxError.
        if (scope.names.has(name) || (functionBody && parent.names.has(name))) throw DECLINE;
        scope.names.set(name, this.slotCount++);
      }
    }
    const run = statements.map((s) => this.statement(s, scope));
    return (e) => {
      for (const r of run) {
        const done = r(e);
        if (done !== undefined) return done;
      }
      return undefined;
    };
  }

  private statement(s: Statement, scope: Scope): Execute {
    switch (s.type) {
      case 'VariableDeclaration': {
        const inits = s.declarations.map((d) => {
          // Declared by this block (a declaration as an `if` branch's whole body is not: a SyntaxError).
          const slot = d.id.type === 'Identifier' ? scope.names.get(d.id.name) : undefined;
          if (slot === undefined) throw DECLINE;
          const init = d.init ? this.expression(d.init, scope) : undefined;
          return { slot, init };
        });
        return (e) => {
          for (const d of inits) e.slots[d.slot] = d.init ? d.init(e) : undefined;
          return undefined;
        };
      }
      case 'ReturnStatement': {
        const arg = s.argument ? this.expression(s.argument, scope) : undefined;
        return (e) => ({ value: arg ? arg(e) : undefined });
      }
      case 'IfStatement': {
        const test = this.expression(s.test, scope);
        const then = this.nested(s.consequent, scope);
        const otherwise = s.alternate ? this.nested(s.alternate, scope) : undefined;
        return (e) => (test(e) ? then(e) : otherwise?.(e));
      }
      case 'BlockStatement':
        return this.block(s.body, scope);
      case 'ExpressionStatement': {
        const ex = this.expression(s.expression, scope);
        return (e) => {
          ex(e);
          return undefined;
        };
      }
      case 'EmptyStatement':
        return () => undefined;
      default:
        throw DECLINE;
    }
  }

  /** The branch of an `if`: a declaration there (not in a block) is a SyntaxError, which acorn reports. */
  private nested(s: Statement, scope: Scope): Execute {
    return s.type === 'BlockStatement' ? this.block(s.body, scope) : this.statement(s, scope);
  }

  private expression(x: Expression | SpreadElement | Node, scope: Scope): Evaluate {
    const n = x as Expression;
    switch (n.type) {
      case 'Literal':
        return literal(n);
      case 'Identifier':
        return this.identifier(n.name, scope);
      case 'TemplateLiteral': {
        const parts = n.expressions.map((p) => this.expression(p, scope));
        const quasis = n.quasis.map((q) => q.value.cooked ?? '');
        return (e) => {
          let out = quasis[0];
          for (let i = 0; i < parts.length; i++) {
            const v = primitive(parts[i](e));
            e.meter.charge(size(v));
            out = capped(out + String(v) + quasis[i + 1]);
          }
          return out;
        };
      }
      case 'ArrayExpression':
        return this.array(n.elements, scope);
      case 'ObjectExpression':
        return this.object(n.properties, scope);
      case 'ChainExpression': {
        const inner = this.expression(n.expression, scope);
        return (e) => {
          const v = inner(e);
          return v === SHORT_CIRCUIT ? undefined : v;
        };
      }
      case 'MemberExpression': {
        if (n.object.type === 'Super' || n.property.type === 'PrivateIdentifier') throw DECLINE;
        const constant = this.namespaceMember(n.object, n.property, n.computed, scope, NAMESPACE_CONSTANTS);
        if (constant !== undefined) return () => constant;
        const object = this.expression(n.object, scope);
        const computed = n.computed ? this.expression(n.property, scope) : undefined;
        const name = n.computed ? '' : (n.property as { name: string }).name;
        const optional = n.optional;
        return (e) => {
          const base = object(e);
          if (base === SHORT_CIRCUIT || (optional && (base === null || base === undefined))) return SHORT_CIRCUIT;
          return readProperty(base, computed ? propertyKey(e, computed(e)) : name);
        };
      }
      case 'CallExpression':
        return this.call(n, scope);
      case 'UnaryExpression':
        return unary(n.operator, this.expression(n.argument, scope));
      case 'BinaryExpression':
        if (n.left.type === 'PrivateIdentifier') throw DECLINE;
        return binary(n.operator, this.expression(n.left, scope), this.expression(n.right, scope));
      case 'LogicalExpression': {
        const l = this.expression(n.left, scope);
        const r = this.expression(n.right, scope);
        if (n.operator === '&&') return (e) => l(e) && r(e);
        if (n.operator === '||') return (e) => l(e) || r(e);
        return (e) => l(e) ?? r(e);
      }
      case 'ConditionalExpression': {
        const test = this.expression(n.test, scope);
        const yes = this.expression(n.consequent, scope);
        const no = this.expression(n.alternate, scope);
        return (e) => (test(e) ? yes(e) : no(e));
      }
      case 'SequenceExpression': {
        const parts = n.expressions.map((p) => this.expression(p, scope));
        return (e) => {
          let v: unknown;
          for (const p of parts) v = p(e);
          return v;
        };
      }
      default:
        throw DECLINE;
    }
  }

  /** A global's property (`Math.PI`, `Math.max`) from `table`, when `object` names that global and no local does. */
  private namespaceMember<T>(object: Node, property: Node, computed: boolean, scope: Scope, table: Map<string, Map<string, T>>): T | undefined {
    if (computed || !isIdentifier(object) || !isIdentifier(property) || this.slotOf(object.name, scope) !== undefined) return undefined;
    return table.get(object.name)?.get(property.name);
  }

  private slotOf(name: string, scope: Scope): number | undefined {
    for (let s: Scope | null = scope; s !== null; s = s.parent) {
      const slot = s.names.get(name);
      if (slot !== undefined) return slot;
    }
    return undefined;
  }

  /** A call of a listed built-in: a global function, a namespace's function, or a method of a string, number or array. */
  private call(n: CallExpression, scope: Scope): Evaluate {
    const args = this.args(n.arguments, scope);
    const callee = n.callee;
    if (callee.type === 'Identifier') {
      const fn = this.slotOf(callee.name, scope) === undefined ? GLOBAL_FUNCTIONS.get(callee.name) : undefined;
      if (fn === undefined) throw DECLINE;
      return (e) => fn(e.meter, undefined, args(e));
    }
    if (callee.type !== 'MemberExpression' || callee.computed || callee.property.type !== 'Identifier' || callee.object.type === 'Super') throw DECLINE;
    const fn = this.namespaceMember(callee.object, callee.property, false, scope, NAMESPACE_FUNCTIONS);
    if (fn !== undefined) return (e) => fn(e.meter, undefined, args(e));
    const name = callee.property.name;
    const object = this.expression(callee.object, scope);
    const optional = callee.optional;
    return (e) => {
      const self = object(e);
      if (self === SHORT_CIRCUIT || (optional && (self === null || self === undefined))) return SHORT_CIRCUIT;
      const method = methodOf(self, name);
      if (method === undefined) throw DECLINE; // not listed, or not a function: a TypeError the sandbox words
      return method(e.meter, self, args(e));
    };
  }

  private args(nodes: readonly (Expression | SpreadElement)[], scope: Scope): (e: Evaluation) => unknown[] {
    const parts = nodes.map((a) => (a.type === 'SpreadElement' ? { spread: true, value: this.expression(a.argument, scope) } : { spread: false, value: this.expression(a, scope) }));
    return (e) => {
      const out: unknown[] = [];
      for (const p of parts) {
        const v = p.value(e);
        if (!p.spread) out.push(v);
        else if (Array.isArray(v)) {
          e.meter.copy(v.length);
          for (const item of v) out.push(item);
        } else throw DECLINE;
      }
      return out;
    };
  }

  private identifier(name: string, scope: Scope): Evaluate {
    for (let s: Scope | null = scope; s !== null; s = s.parent) {
      const slot = s.names.get(name);
      if (slot === undefined) continue;
      return (e) => {
        const v = e.slots[slot];
        if (v === UNINITIALIZED) throw DECLINE;
        return v;
      };
    }
    // The global object's own constants, which code cannot change (non-writable, non-configurable).
    if (name === 'undefined') return () => undefined;
    if (name === 'NaN') return () => NaN;
    if (name === 'Infinity') return () => Infinity;
    throw DECLINE;
  }

  private array(elements: readonly (Expression | SpreadElement | null)[], scope: Scope): Evaluate {
    const parts = elements.map((el) => {
      if (el === null) throw DECLINE; // a hole: the array's prototype would show through it
      return el.type === 'SpreadElement' ? { spread: true, value: this.expression(el.argument, scope) } : { spread: false, value: this.expression(el, scope) };
    });
    return (e) => {
      const out: unknown[] = [];
      for (const p of parts) {
        const v = p.value(e);
        if (!p.spread) {
          e.meter.copy(1);
          out.push(v);
        } else if (Array.isArray(v)) {
          e.meter.copy(v.length);
          for (const item of v) out.push(item);
        } else {
          throw DECLINE; // a string's characters, or a TypeError for what is not iterable
        }
      }
      return out;
    };
  }

  private object(properties: readonly (Property | SpreadElement)[], scope: Scope): Evaluate {
    const parts = properties.map((p) => {
      if (p.type === 'SpreadElement') return { spread: true as const, value: this.expression(p.argument, scope) };
      if (p.kind !== 'init' || p.method) throw DECLINE;
      const value = this.expression(p.value, scope);
      if (p.computed) return { spread: false as const, key: this.expression(p.key, scope), value };
      const name = p.key.type === 'Identifier' ? p.key.name : p.key.type === 'Literal' ? staticKey(p.key) : undefined;
      if (name === undefined) throw DECLINE;
      // `__proto__: x` sets the new object's prototype instead of defining a property.
      if (name === '__proto__' && !p.shorthand) throw DECLINE;
      return { spread: false as const, key: () => name, value };
    });
    return (e) => {
      const out: Record<string, unknown> = {};
      for (const p of parts) {
        if (!p.spread) {
          const key = propertyKey(e, p.key(e));
          e.meter.copy(1);
          define(out, key, p.value(e));
          continue;
        }
        const v = p.value(e);
        if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean') continue;
        if (typeof v !== 'object') throw DECLINE;
        const keys = Object.keys(v);
        e.meter.copy(keys.length);
        for (const k of keys) define(out, k, (v as Record<string, unknown>)[k]);
      }
      return out;
    };
  }
}

function isIdentifier(n: Node): n is Identifier {
  return n.type === 'Identifier';
}

function literal(n: Literal): Evaluate {
  if (n.regex !== undefined || n.bigint !== undefined) throw DECLINE;
  const v = n.value;
  return () => v;
}

function staticKey(n: Literal): string | undefined {
  if (typeof n.value === 'string') return n.value;
  if (typeof n.value === 'number') return String(n.value);
  return undefined;
}

/** A computed key of a primitive value (JavaScript's ToPropertyKey, which for primitives is String). */
function propertyKey(e: Evaluation, v: unknown): string {
  e.meter.charge(size(primitive(v)));
  return String(v);
}

/** The listed method `name` of a string, number or array; undefined for anything else. */
function methodOf(self: unknown, name: string): Builtin | undefined {
  if (typeof self === 'string') return STRING_METHODS.get(name);
  if (typeof self === 'number') return NUMBER_METHODS.get(name);
  return Array.isArray(self) ? ARRAY_METHODS.get(name) : undefined;
}

/** An own data property, as an object literal defines it (never through a `__proto__` setter). */
function define(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
}

function unary(operator: string, arg: Evaluate): Evaluate {
  switch (operator) {
    case '!':
      return (e) => !arg(e);
    case 'typeof':
      return (e) => typeof arg(e);
    case 'void':
      return (e) => {
        arg(e);
        return undefined;
      };
    case '-':
      return (e) => -(charged(e, primitive(arg(e))) as number);
    case '+':
      return (e) => +(charged(e, primitive(arg(e))) as number);
    case '~':
      return (e) => ~(charged(e, primitive(arg(e))) as number);
    default:
      throw DECLINE; // delete
  }
}

type Operands = (a: number, b: number) => unknown;

/** Operators on primitives, as the host computes them; the types are JavaScript's, not TypeScript's. */
const OPERATORS: Record<string, Operands> = {
  '+': (a, b) => a + b, '-': (a, b) => a - b, '*': (a, b) => a * b, '/': (a, b) => a / b, '%': (a, b) => a % b,
  '**': (a, b) => a ** b, '<': (a, b) => a < b, '<=': (a, b) => a <= b, '>': (a, b) => a > b, '>=': (a, b) => a >= b,
  // Loose equality, as the user's code asked for it.
  '==': (a, b) => a == b, '!=': (a, b) => a != b,
  '&': (a, b) => a & b, '|': (a, b) => a | b, '^': (a, b) => a ^ b, '<<': (a, b) => a << b, '>>': (a, b) => a >> b, '>>>': (a, b) => a >>> b,
};

/** `v`, its cost charged: comparing or converting a string goes through its characters. */
function charged(e: Evaluation, v: unknown): unknown {
  e.meter.charge(size(v));
  return v;
}

function binary(operator: string, left: Evaluate, right: Evaluate): Evaluate {
  if (operator === '===') return (e) => charged(e, left(e)) === charged(e, right(e));
  if (operator === '!==') return (e) => charged(e, left(e)) !== charged(e, right(e));
  const op = OPERATORS[operator];
  if (op === undefined) throw DECLINE; // in, instanceof
  return (e) => {
    const a = charged(e, primitive(left(e))) as number;
    const b = charged(e, primitive(right(e))) as number;
    const v = op(a, b);
    return typeof v === 'string' ? capped(v) : v;
  };
}
