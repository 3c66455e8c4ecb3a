# sqlkube: build, run and test. `make test` is what CI runs (see .ci/run).

BIN     := bin/sqlkube
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
LISTEN  ?= 127.0.0.1:8080
DB      ?= sqlite://./sqlkube.db
# Fuzz targets are found by name; each runs for FUZZTIME.
FUZZTIME ?= 20s
# Test output goes through cmd/testreport: failures in full, every skip with its reason, a closing
# count; in CI (CI set, not 0 or false) a skip not listed in .ci/allowed-skips fails the run.
SHELL := /bin/bash
STRICT := $(if $(filter-out 0 false FALSE,$(CI)),--strict)
REPORT := go run ./cmd/testreport --allowed-skips .ci/allowed-skips $(STRICT)

.PHONY: build run test conformance cluster cluster-binaries envtest bench bench-audit bench-cluster bench-restart bench-scale lint fuzz clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sqlkube

run: build
	./$(BIN) --listen $(LISTEN) --db $(DB)

# Unit, conformance and e2e tests on SQLite and PostgreSQL; fuzz targets run their seed corpora.
# The end-to-end package runs after the others rather than beside them: on two cores each slowed
# the other down, and e2e (7 minutes alone) passed its 14-minute timeout beside the rest (5
# minutes alone). In a fresh clone e2e took 12 minutes (it builds the server and helm first),
# hence its longer timeout, which is for hangs.
test:
	set -o pipefail; { status=0; go test $$(go list ./... | grep -v '/e2e$$') -count=1 -timeout 14m -json 2>&1 || status=$$?; \
		go test ./e2e -count=1 -timeout 20m -json 2>&1 || status=$$?; exit $$status; } | $(REPORT)

# Differential conformance: the same requests to kube's own API servers and to sqlkube, responses
# compared (docs/conformance.md): apiextensions-apiserver in-process (e2e/kuberef, its own module)
# and the whole kube-apiserver, which the test builds from k8s.io/kubernetes (pinned in
# e2e/kuberef/kubeapiserver; about 14 CPU-minutes on a cold cache, so the longer timeout).
conformance:
	set -o pipefail; (cd e2e/kuberef && go test ./... -count=1 -timeout 40m -json 2>&1) | $(REPORT)

# A cluster on sqlkube (issue 47): the real kube-controller-manager and kube-scheduler v1.37.2,
# built from the k8s.io/kubernetes module pinned in e2e/kuberef/kubecluster (kuberef's
# kube-apiserver module plus the two commands), and kwok v0.8.0's simulated kubelets
# (e2e/kuberef/kwok, its own module: its Kubernetes libraries are older), with the stages in
# e2e/cluster/kwok-stages.yaml. The binaries are built once into KUBE_BIN and rebuilt when their
# module changes (a cold build is ~15 CPU-minutes); SQLKUBE_KUBE_CONTROLLER_MANAGER,
# SQLKUBE_KUBE_SCHEDULER, SQLKUBE_KWOK and SQLKUBE_KUBE_APISERVER name binaries built elsewhere
# instead. `make cluster` runs e2e TestRealCluster on SQLite and PostgreSQL.
KUBE_BIN ?= $(abspath bin/kube)
SQLKUBE_KUBE_CONTROLLER_MANAGER ?= $(KUBE_BIN)/kube-controller-manager
SQLKUBE_KUBE_SCHEDULER ?= $(KUBE_BIN)/kube-scheduler
SQLKUBE_KWOK ?= $(KUBE_BIN)/kwok
# As e2e/kuberef's BuildKubeAPIServer stamps kube-apiserver: without them the binaries call
# themselves v0.0.0-master.
KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=v1.37.2 -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=37 -X $(pkg).gitTreeState=clean)
CLUSTER_ENV = SQLKUBE_KUBE_CONTROLLER_MANAGER=$(SQLKUBE_KUBE_CONTROLLER_MANAGER) \
	SQLKUBE_KUBE_SCHEDULER=$(SQLKUBE_KUBE_SCHEDULER) SQLKUBE_KWOK=$(SQLKUBE_KWOK)

$(KUBE_BIN)/kube-controller-manager $(KUBE_BIN)/kube-scheduler $(KUBE_BIN)/kube-apiserver: e2e/kuberef/kubecluster/go.mod
	cd e2e/kuberef/kubecluster && go build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)
$(KUBE_BIN)/kwok: e2e/kuberef/kwok/go.mod
	cd e2e/kuberef/kwok && go build -o $@ sigs.k8s.io/kwok/cmd/kwok

cluster-binaries: $(SQLKUBE_KUBE_CONTROLLER_MANAGER) $(SQLKUBE_KUBE_SCHEDULER) $(SQLKUBE_KWOK)

cluster: cluster-binaries
	set -o pipefail; $(CLUSTER_ENV) go test ./e2e -run '^TestRealCluster$$' -count=1 -timeout 20m -json 2>&1 | $(REPORT)

# controller-runtime's own envtest-based tests (issue 44), unchanged, at the version go.mod
# requires: its envtest package and its client's integration tests, with KUBEBUILDER_ASSETS
# holding sqlkube linked as kube-apiserver, etcd (built from e2e/kuberef) and kubectl.
ENVTEST_DIR ?= $(abspath bin/envtest)
envtest: build
	rm -rf $(ENVTEST_DIR) && mkdir -p $(ENVTEST_DIR)/assets
	ln -s $(abspath $(BIN)) $(ENVTEST_DIR)/assets/kube-apiserver
	ln -s "$$(command -v kubectl)" $(ENVTEST_DIR)/assets/kubectl
	cd e2e/kuberef && go build -o $(ENVTEST_DIR)/assets/ ./cmd/etcd
	cp -r "$$(go list -m -f '{{.Dir}}' sigs.k8s.io/controller-runtime)" $(ENVTEST_DIR)/controller-runtime
	chmod -R u+w $(ENVTEST_DIR)/controller-runtime
	set -o pipefail; (cd $(ENVTEST_DIR)/controller-runtime && KUBEBUILDER_ASSETS=$(ENVTEST_DIR)/assets \
		go test ./pkg/envtest ./pkg/client -count=1 -json 2>&1) | $(REPORT)

# The density run of issues 47 and 43 (e2e TestBenchCluster): NODES kwok nodes, then a Deployment
# of PODS pods, kube-controller-manager and kube-scheduler at QPS/BURST, on sqlkube SQLite,
# sqlkube PostgreSQL and kube-apiserver + etcd (built as above, started by e2e/kuberef's
# cmd/kubefull with the same security), in one sitting. The Markdown table is printed and written
# to BENCH_CLUSTER_OUT; CPU profiles of sqlkube while the pods start go to PROFILE_DIR if set.
NODES ?= 100
PODS ?= 3000
QPS ?= 100
BURST ?= 200
BENCH_CLUSTER_OUT ?= bench-cluster.md
bench-cluster: cluster-binaries $(or $(SQLKUBE_KUBE_APISERVER),$(KUBE_BIN)/kube-apiserver)
	cd e2e/kuberef && go build -o $(KUBEREF_BIN)/ ./cmd/kubefull ./cmd/etcd
	$(CLUSTER_ENV) SQLKUBE_BENCH_CLUSTER=1 SQLKUBE_BENCH_CLUSTER_NODES=$(NODES) SQLKUBE_BENCH_CLUSTER_PODS=$(PODS) \
		SQLKUBE_BENCH_CLUSTER_QPS=$(QPS) SQLKUBE_BENCH_CLUSTER_BURST=$(BURST) SQLKUBE_BENCH_OUT=$(abspath $(BENCH_CLUSTER_OUT)) \
		SQLKUBE_KUBE_APISERVER=$(or $(SQLKUBE_KUBE_APISERVER),$(KUBE_BIN)/kube-apiserver) SQLKUBE_BENCH_KUBEFULL=$(KUBEREF_BIN)/kubefull \
		SQLKUBE_CPU_PROFILE_DIR=$(PROFILE_DIR) go test ./e2e -run '^TestBenchCluster$$' -count=1 -v -timeout 3h

# Issue 33's table in the production configuration, in one sitting: sqlkube on SQLite and on
# PostgreSQL and, when SQLKUBE_KUBE_APISERVER names a kube-apiserver v1.37.2 binary (built as
# e2e/kuberef's BuildKubeAPIServer builds it, ~30 minutes), kube-apiserver on etcd with the same
# security, and the ratios. One test (e2e TestBenchTable) measures every
# column with the same code and load tool; e2e/kuberef, its own module, only provides the server:
# its cmd/kubefull (kube-apiserver on an etcd process of its own, from its cmd/etcd) is built into
# KUBEREF_BIN and started by the test. Without SQLKUBE_KUBE_APISERVER the table has sqlkube's
# columns and says why kube's is missing. The Markdown table is printed and written to BENCH_OUT
# (docs/benchmarks.md keeps each run's).
BENCH_OUT ?= bench-table.md
KUBEREF_BIN ?= $(abspath bin/kuberef)
bench:
ifneq ($(SQLKUBE_KUBE_APISERVER),)
	cd e2e/kuberef && go build -o $(KUBEREF_BIN)/ ./cmd/kubefull ./cmd/etcd
endif
	SQLKUBE_BENCH_TABLE=1 SQLKUBE_BENCH_OUT=$(abspath $(BENCH_OUT)) SQLKUBE_KUBE_APISERVER=$(SQLKUBE_KUBE_APISERVER) \
		SQLKUBE_BENCH_KUBEFULL=$(if $(SQLKUBE_KUBE_APISERVER),$(KUBEREF_BIN)/kubefull) \
		go test ./e2e -run '^TestBenchTable$$' -count=1 -v -timeout 2h

# Issue 14's audit budget: creates with and without audit at Metadata, ROUNDS shuffled rounds per
# backend in one sitting; logs the mean change in throughput ± its standard error.
ROUNDS ?= 8
bench-audit:
	SQLKUBE_BENCH_AUDIT=1 SQLKUBE_BENCH_ROUNDS=$(ROUNDS) go test ./e2e -run '^TestBenchAudit$$' -count=1 -v -timeout 2h

# Restart memory on N stored objects, on SQLite and PostgreSQL (docs/benchmarks.md).
N ?= 100000
bench-restart:
	SQLKUBE_RESTART_OBJECTS=$(N) go test ./e2e -run '^TestRestartMemory$$' -count=1 -v -timeout 3h

# Issue 17 at scale (docs/benchmarks.md): start-up, SCALE_N objects on each backend, SCALE_SUSTAIN of
# updates with compaction, three replicas; each figure is logged with "FIGURE" and the load average.
# Heap profiles go to SCALE_PROFILES if set.
SCALE_N ?= 1000000
SCALE_SUSTAIN ?= 10m
bench-scale:
	SQLKUBE_SCALE_OBJECTS=$(SCALE_N) SQLKUBE_SCALE_SUSTAIN=$(SCALE_SUSTAIN) SQLKUBE_SCALE_PROFILES=$(SCALE_PROFILES) \
		go test ./e2e -run '^TestBenchScale$$/$(SCALE_RUN)' -count=1 -v -timeout 4h

# The JavaScript client the e2e tests drive (the Python one is Debian's python3-kubernetes).
clients:
	npm ci --prefix e2e/clients/js --no-audit --no-fund --loglevel=error

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

fuzz:
	@set -e; for pkg in $$(go list ./...); do \
		for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			go test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
		done; \
	done

clean:
	rm -rf bin
