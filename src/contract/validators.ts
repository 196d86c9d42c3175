/**
 * The precompiled validators from generated/ (Ajv standalone output is CommonJS, see
 * ../shared/design/toolchain.md), and the mapping from Ajv's errors to the specification's `data.issues`.
 */
import { createRequire } from 'node:module';
import { badRequest, type ValidationIssue } from './errors.ts';

export interface AjvError {
  instancePath: string;
  keyword: string;
  /** Ajv sets missingProperty for `required` and additionalProperty for `additionalProperties`. */
  params: { missingProperty?: string; additionalProperty?: string; [name: string]: unknown };
  message?: string;
}

export interface ValidateFunction {
  (data: unknown): boolean;
  errors?: AjvError[] | null;
}

const require = createRequire(import.meta.url);
type Validators = Record<string, ValidateFunction>;
// Each file is loaded at its first use, not at start: the four take about 30 ms to load, which
// every start paid while its database opened (bench/start.ts); the answers' two are used only
// where answers are checked (VALIDATE_RESPONSES). The procedures' and the identity routes' input
// validators share one lookup: their names never collide (auth.* vs the procedure groups).
let inputs: Validators | undefined;
let outputs: Validators | undefined;
let authOutputs: Validators | undefined;
const inputValidators = (): Validators => (inputs ??= { ...require('../../generated/validators-input.cjs'), ...require('../../generated/auth-validators-input.cjs') } as Validators);
const outputValidators = (): Validators => (outputs ??= require('../../generated/validators-output.cjs') as Validators);
const authOutputValidators = (): Validators => (authOutputs ??= require('../../generated/auth-validators-output.cjs') as Validators);

export function inputValidator(procedure: string): ValidateFunction {
  const validate = inputValidators()[`input_${procedure.replace(/\./g, '_')}`];
  if (!validate) throw new Error(`no input validator for ${procedure}: run make codegen`);
  return validate;
}

/** The validator of one response body of a procedure, or undefined when that status has no JSON body. */
export function outputValidator(procedure: string, status: number): ValidateFunction | undefined {
  const name = `output_${procedure.replace(/\./g, '_')}_${status}`;
  return procedure.startsWith('auth.') ? authOutputValidators()[name] : outputValidators()[name];
}

/** The validator of a named component schema of the procedures' contract (e.g. NotFoundError). */
export function schemaValidator(component: string): ValidateFunction | undefined {
  return outputValidators()[`schema_${component}`];
}

/**
 * Validates input in place (defaults are filled in) or throws 400 BAD_REQUEST with the issues,
 * together with any a transport found before (a field sent in the wrong place).
 */
export function validateInput(procedure: string, input: unknown, earlier: ValidationIssue[] = []): void {
  const validate = inputValidator(procedure);
  const valid = validate(input);
  if (!valid || earlier.length > 0) throw badRequest([...earlier, ...(valid ? [] : toIssues(validate.errors ?? []))]);
}

export function toIssues(errors: AjvError[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    // Ajv reports the failing branches of a oneOf as well as the oneOf itself; the branches say more.
    if (error.keyword === 'oneOf' || error.keyword === 'anyOf' || error.keyword === 'if') continue;
    const path = pointerToPath(error.instancePath);
    if (error.keyword === 'required') path.push(error.params.missingProperty!);
    if (error.keyword === 'additionalProperties') path.push(error.params.additionalProperty!);
    const message = error.keyword === 'additionalProperties' ? 'is not a known field' : (error.message ?? 'is invalid');
    const key = `${JSON.stringify(path)} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const params = error.keyword === 'required' || error.keyword === 'additionalProperties' ? undefined : error.params;
    issues.push({ path, message, ...(params && Object.keys(params).length > 0 ? { params } : {}) });
  }
  return issues.length > 0 ? issues : [{ path: [], message: 'is invalid' }];
}

function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => {
      const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
      return /^\d+$/.test(key) ? Number(key) : key;
    });
}
