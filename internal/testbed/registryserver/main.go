// Command registryserver is the test bed's schema registry: franz-go's
// in-memory srfake (the Confluent Schema Registry REST API; its
// compatibility checks always pass) served on 127.0.0.1, with optional basic
// or bearer auth, and a control API on a second port for fault tests:
//
//	POST   /_fault  {"status":409,"count":2,"path":"/subjects"}  the next 2 requests under /subjects answer 409
//	POST   /_fault  {"status":503,"for":"60s"}                   every request answers 503 for 60 s
//	DELETE /_fault                                               no more faults
//	POST   /_outage {"for":"60s"}                                the registry's port refuses connections for 60 s
//	POST   /_outage {"down":true} / {"down":false}               … until told otherwise
//	GET    /_status                                              {"down":…,"faults":…,"requests":…}
//
// It prints "registryserver: registry http://127.0.0.1:P control http://127.0.0.1:C"
// and then "registryserver: ready".
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.port, "port", 0, "the registry's port on 127.0.0.1 (0: any free port)")
	flag.IntVar(&cfg.controlPort, "control-port", 0, "the control API's port on 127.0.0.1 (0: any free port)")
	basic := flag.String("basic", "", "user:password: require HTTP basic auth (basic.auth.user.info)")
	bearer := flag.String("bearer", "", "token: require a bearer token")
	flag.Parse()
	switch {
	case *basic != "" && *bearer != "":
		fmt.Fprintln(os.Stderr, "registryserver: -basic and -bearer exclude each other")
		os.Exit(2)
	case *basic != "":
		cfg.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(*basic))
	case *bearer != "":
		cfg.auth = "Bearer " + *bearer
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, cfg, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "registryserver:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, printing the addresses and the ready line to out.
func run(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) error {
	s, err := start(cfg, log)
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintf(out, "registryserver: registry %s control %s\n", s.registryURL(), s.controlURL())
	fmt.Fprintln(out, "registryserver: ready")
	<-ctx.Done()
	return nil
}
