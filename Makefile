# The verbs people type. Every target installs what it needs first; npm scripts run on the
# Node 24 that the `node` dev dependency puts first on their PATH (see toolchain.md).
.PHONY: install browser start test codegen codegen-check lint mock bench ci clean

STAMP := node_modules/.install-stamp

install: $(STAMP)

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

start: install
	npm run --silent start

# The identity reference page is tested in a real browser: Debian's chromium package.
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package) for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

test: install browser
	npm run --silent test

codegen: install
	npm run --silent codegen

codegen-check: install
	npm run --silent codegen:check

lint: install
	npm run --silent lint

mock: install
	npm run --silent mock

bench: install
	npm run --silent bench

ci: lint codegen-check test

clean:
	rm -rf .data .tmp
