/** The issues of an input the contract's input validator refuses, as the server reports them. */
import { expect } from 'vitest';
import { ApiError } from '../../src/contract/errors.ts';
import { validateInput } from '../../src/contract/validators.ts';

export interface InputIssue {
  path: (string | number)[];
  message: string;
  params?: Record<string, any>;
}

/** The issues validateInput finds in `input` to `procedure`: [] when it accepts it, else those of its BAD_REQUEST ApiError. */
export function issuesOf(procedure: string, input: Record<string, unknown>): InputIssue[] {
  try {
    validateInput(procedure, input);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return ((error as ApiError).data as { issues: InputIssue[] }).issues;
  }
}
