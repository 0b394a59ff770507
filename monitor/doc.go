// Package monitor lets an operator watch the farm while it runs: the live
// campaign page (progress, ETA, workers, failures and the campaign's main
// plots filling in as points complete), Prometheus metrics (/metrics),
// health checks (/healthz: the process is alive; /readyz: it reaches NATS
// and storage) and the structured logger the commands share.
//
// It is its own package, not part of coordinator or worker, because one
// HTTP server serves all three roles: `msjfarm coordinator --http` (page,
// coordinator metrics, health), `msjfarm worker --metrics` (worker metrics,
// health) and `msjfarm run --http` (everything in one process). The
// coordinator and the worker stay free of net/http and Prometheus: they
// expose a copy of their state (coordinator.LiveView) and callbacks
// (worker.Options.Observe), and this package turns those into pages and
// metrics.
//
// The page is static HTML, CSS and JavaScript embedded in the binary (no
// CDN: cluster nodes often have no internet) that polls
// /api/campaigns/<id> once a second. The plots are drawn as SVG by hand.
// The server never sends a configuration value: no NATS URL, user or
// password, no storage URL (which could carry S3 keys).
package monitor
