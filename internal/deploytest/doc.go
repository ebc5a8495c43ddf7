// Package deploytest tests what operators run rather than what developers
// build: the container image made from the repository's Dockerfile
// (TestImage, run by `make image-test`), the Prometheus alert rules and the
// Grafana dashboard against a live Prometheus scraping a live relay, and the
// Kubernetes manifest against the image and the relay's HTTP endpoints.
// It holds tests only.
package deploytest
