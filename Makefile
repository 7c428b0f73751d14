# Targets the README uses. Everything real (PostgreSQL, Redis, Kafka, kube-apiserver) is started by test/infra.
.PHONY: install start test test-unit test-int typecheck lint infra-up infra-down k8s-up k8s-down bench

install:
	npm install --no-audit --no-fund

start:
	npm start

test:
	npm test

test-unit:
	npx jest --selectProjects unit

test-int: infra-up
	set -a; . $${LORE_INFRA_DIR:-$$HOME/.cache/lore/run}/env; set +a; npx jest --selectProjects integration --runInBand

typecheck:
	npx tsc -b
	for p in test operator/test bench; do npx tsc -p $$p/tsconfig.json --noEmit || exit 1; done

lint:
	npx eslint .

infra-up:
	bash test/infra/up.sh

infra-down:
	bash test/infra/down.sh

k8s-up:
	bash test/infra/k8s/build.sh && bash test/infra/k8s/up.sh

k8s-down:
	bash test/infra/k8s/down.sh

bench:
	npm run bench:kit
