// Package deploytest tests what operators run rather than what developers
// build: the container image made from the repository's Dockerfile
// (TestImage, run by `make image-test`), the Prometheus alert rules and the
// Grafana dashboard against a live Prometheus scraping a live relay, and the
// Kubernetes manifest against the image and the relay's HTTP endpoints, and
// the manifest's hardening (TLS to both peers, secrets from files, the
// NetworkPolicy, the pinned image, the limits; hardening_test.go).
// It holds tests only.
package deploytest
