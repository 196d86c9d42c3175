/**
 * `local/declared-error-codes`: a handler may throw only the error codes its operation declares
 * in the contract (generated/procedures.ts, generated/auth-routes.ts: `errors`). Throwing is
 * untyped in TypeScript, so tsc cannot see it; this rule follows the handler with the type
 * checker instead: every `throw` whose value is typed `ApiError<'X'>` (a `new ApiError('X')` or a
 * factory such as `badRequest()` or `slugTaken()`), lexically inside the handler and inside every
 * function of the project it refers to, transitively across modules. A code outside the declared
 * list would otherwise surface only at run time, as the error handler's 500 outside production.
 *
 * What it cannot see: calls through an interface (the services: `ctx.services.plans.limitsFor`),
 * whose implementation is chosen at run time, and values thrown untyped (`throw error` of an
 * `unknown`, a rethrow). Those paths are covered by the run-time check in http/error-handler.ts.
 */
import path from 'node:path';
import type { Rule } from 'eslint';
import ts from 'typescript';
import { procedures } from '../generated/procedures.ts';
import { authRoutes } from '../generated/auth-routes.ts';

/** Each operation's declared codes, by the name its handler is keyed by. */
const declaredCodes = new Map<string, readonly string[]>([...Object.entries(procedures), ...Object.entries(authRoutes)].map(([name, definition]) => [name, definition.errors]));

/** The part of typescript-eslint's parser services this rule reads. */
interface TypedParserServices {
  program: ts.Program;
  esTreeNodeToTSNodeMap: { get(node: unknown): ts.Node | undefined };
}

/**
 * A throw of an ApiError found in a function's own body: its codes, or null when its type admits
 * every code (a bare `ApiError`), which says nothing a contract can be checked against.
 */
interface ThrowSite {
  codes: readonly string[] | null;
  node: ts.Node;
}

/** What one function's body does, without following anything: computed once per program. */
interface Facts {
  throws: ThrowSite[];
  /** The project's functions it refers to (calls, or hands on as callbacks). */
  refers: { target: ts.Node; name: string }[];
}

/** How a throw site was reached from the handler: the functions passed through, outermost first. */
interface Finding {
  /** null: an ApiError whose type does not tell its code. */
  code: string | null;
  node: ts.Node;
  chain: string[];
}

const factsByProgram = new WeakMap<ts.Program, Map<ts.Node, Facts>>();

const rule: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: "Report error codes a procedure's handler can throw that its contract does not declare" },
    schema: [],
    messages: {
      undeclared: "'{{operation}}' throws {{code}}, which its contract does not declare (declared: {{declared}}).",
      undeclaredVia: "'{{operation}}' can throw {{code}} through {{chain}} (thrown at {{site}}), which its contract does not declare (declared: {{declared}}).",
      unknownCode:
        "'{{operation}}' throws an ApiError whose type does not say its code (thrown at {{site}}{{via}}): type it as ApiError<'CODE'> (e.g. the factory's return type) so it can be checked against the contract.",
      untyped: 'declared-error-codes needs type information: lint with parserOptions.projectService.',
    },
  },
  create(context) {
    const services = context.sourceCode.parserServices as Partial<TypedParserServices> | undefined;
    const program = services?.program;
    if (!program || !services.esTreeNodeToTSNodeMap) {
      return {
        Program(node) {
          context.report({ node, messageId: 'untyped' });
        },
      };
    }
    const nodeMap = services.esTreeNodeToTSNodeMap;
    const analysis = analyzer(program);
    const root = context.cwd;

    return {
      Property(node) {
        if (node.parent.type !== 'ObjectExpression' || node.computed || node.key.type !== 'Literal' || typeof node.key.value !== 'string') return;
        const operation = node.key.value;
        const declared = declaredCodes.get(operation);
        if (!declared) return;
        const tsProperty = nodeMap.get(node);
        if (!tsProperty) return;
        // `'x': async (input, ctx) => ...` or `'x': handlerFn` (the initializer), `async 'x'(input, ctx) {}` (the method).
        const handler = ts.isPropertyAssignment(tsProperty) ? tsProperty.initializer : tsProperty;
        const file = tsProperty.getSourceFile();
        for (const finding of analysis.findings(handler)) {
          if (finding.code !== null && declared.includes(finding.code)) continue;
          // Thrown in the handler itself: reported where it is thrown; else at the handler, with the way there.
          const direct = finding.chain.length === 0 && finding.node.getSourceFile() === file;
          const at = direct ? { loc: locationOf(finding.node) } : { node: node.key };
          const site = where(finding.node, root);
          const chain = finding.chain.join(' → ');
          if (finding.code === null) {
            context.report({ ...at, messageId: 'unknownCode', data: { operation, site, via: chain ? `, through ${chain}` : '' } });
          } else {
            const data = { operation, code: finding.code, declared: declared.join(', ') };
            context.report(direct ? { ...at, messageId: 'undeclared', data } : { ...at, messageId: 'undeclaredVia', data: { ...data, chain, site } });
          }
        }
      },
    };
  },
};

export default rule;

/** The handler-independent part: each function's facts, cached for the program's lifetime. */
function analyzer(program: ts.Program) {
  const checker = program.getTypeChecker();
  let cache = factsByProgram.get(program);
  if (!cache) factsByProgram.set(program, (cache = new Map<ts.Node, Facts>()));
  const facts = cache;

  const inProject = (node: ts.Node): boolean => {
    const file = node.getSourceFile();
    return !file.isDeclarationFile && !program.isSourceFileFromExternalLibrary(file) && !file.fileName.includes('/node_modules/');
  };

  /** The function a reference names, when it is one with a body in the project. */
  const functionOf = (symbol: ts.Symbol | undefined): ts.Node | undefined => {
    if (!symbol) return undefined;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const declaration = symbol.valueDeclaration ?? symbol.declarations?.[0];
    if (!declaration || !inProject(declaration)) return undefined;
    if (ts.isShorthandPropertyAssignment(declaration)) return functionOf(checker.getShorthandAssignmentValueSymbol(declaration));
    const body = ts.isVariableDeclaration(declaration) || ts.isPropertyAssignment(declaration) ? declaration.initializer : declaration;
    const fn = body && skipWrappers(body);
    return fn && isFunctionWithBody(fn) ? fn : undefined;
  };

  /** Every code of the catalogue: the constraint of ApiError's type parameter (ErrorCode). */
  let everyCode: number | undefined;
  const catalogueSize = (apiError: ts.Type): number => {
    if (everyCode === undefined) {
      const parameter = checker.getDeclaredTypeOfSymbol(apiError.getSymbol()!) as ts.InterfaceType;
      const constraint = parameter.typeParameters?.[0]?.getConstraint();
      everyCode = constraint?.isUnion() ? constraint.types.length : 1;
    }
    return everyCode;
  };

  /** The ApiError codes a thrown value's type says it carries; none when it is no ApiError. */
  const codesOf = (expression: ts.Expression): string[] | null => {
    const type = checker.getTypeAtLocation(expression);
    const codes: string[] = [];
    for (const part of type.isUnion() ? type.types : [type]) {
      const apiError = apiErrorOf(part);
      if (!apiError) continue;
      const property = checker.getPropertyOfType(part, 'code');
      const code = property && checker.getTypeOfSymbol(property);
      const literals = code ? (code.isUnion() ? code.types : [code]) : [];
      if (literals.length >= catalogueSize(apiError) || literals.some((literal) => !literal.isStringLiteral())) return null;
      for (const literal of literals) if (literal.isStringLiteral()) codes.push(literal.value);
    }
    return codes;
  };

  const factsOf = (unit: ts.Node): Facts => {
    const known = facts.get(unit);
    if (known) return known;
    const found: Facts = { throws: [], refers: [] };
    const visit = (node: ts.Node): void => {
      if (ts.isThrowStatement(node)) {
        const codes = codesOf(node.expression);
        if (codes === null || codes.length > 0) found.throws.push({ codes, node });
      } else if (ts.isIdentifier(node)) {
        const target = functionOf(checker.getSymbolAtLocation(node));
        // A function declared inside this one is walked with it already.
        if (target && !contains(unit, target)) found.refers.push({ target, name: node.text });
      }
      ts.forEachChild(node, visit);
    };
    visit(unit);
    facts.set(unit, found);
    return found;
  };

  return {
    /** Every ApiError throw the handler can reach, once per (code, site), by the shortest chain. */
    findings(handler: ts.Node): Finding[] {
      const result: Finding[] = [];
      const seen = new Set<string>();
      const visited = new Set<ts.Node>([handler]);
      const queue: { unit: ts.Node; chain: string[] }[] = [{ unit: handler, chain: [] }];
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { throws, refers } = factsOf(next.unit);
        for (const site of throws) {
          for (const code of site.codes ?? [null]) {
            const key = `${code ?? '?'}@${site.node.getSourceFile().fileName}:${site.node.pos}`;
            if (seen.has(key)) continue;
            seen.add(key);
            result.push({ code, node: site.node, chain: next.chain });
          }
        }
        for (const { target, name } of refers) {
          if (visited.has(target)) continue;
          visited.add(target);
          queue.push({ unit: target, chain: [...next.chain, name] });
        }
      }
      return result;
    },
  };
}

/** The catalogue's error class (src/contract/errors.ts) when the type is it or a subclass of it. */
function apiErrorOf(type: ts.Type): ts.Type | undefined {
  const symbol = type.getSymbol();
  if (!symbol) return undefined;
  if (symbol.getName() === 'ApiError' && symbol.declarations?.some((d) => d.getSourceFile().fileName.endsWith('/contract/errors.ts'))) return type;
  const bases = type.isClassOrInterface() ? (type.getBaseTypes() ?? []) : [];
  for (const base of bases) {
    const found = apiErrorOf(base);
    if (found) return found;
  }
  return undefined;
}

function isFunctionWithBody(node: ts.Node): boolean {
  return (ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isMethodDeclaration(node) || ts.isAccessor(node)) && node.body !== undefined;
}

/** `(fn)`, `fn as T`, `fn satisfies T`: the function itself. */
function skipWrappers(node: ts.Node): ts.Node {
  while (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)) node = node.expression;
  return node;
}

function contains(outer: ts.Node, inner: ts.Node): boolean {
  return outer.getSourceFile() === inner.getSourceFile() && inner.pos >= outer.pos && inner.end <= outer.end;
}

function locationOf(node: ts.Node) {
  const file = node.getSourceFile();
  const start = file.getLineAndCharacterOfPosition(node.getStart(file));
  const end = file.getLineAndCharacterOfPosition(node.getEnd());
  return { start: { line: start.line + 1, column: start.character }, end: { line: end.line + 1, column: end.character } };
}

function where(node: ts.Node, root: string): string {
  const file = node.getSourceFile();
  return `${path.relative(root, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
}
