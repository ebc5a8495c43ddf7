// Command registryfake is the test bed's schema registry: franz-go's
// in-memory Confluent-compatible registry (srfake; its compatibility
// checks always pass) served on 127.0.0.1, with a fault switch and
// registration counts for the tests that run the real binary against it.
//
//	POST   /__fault?status=503&for=60s   every registry request answers status (for: until then; none: until cleared)
//	DELETE /__fault                      answers normally again
//	GET    /__stats                      {"registrations":{"<subject>":n},"versions":{"<subject>":n}}
//
// It prints "registry http://127.0.0.1:<port>" once it listens.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	auth := flag.String("auth", "", `expected Authorization header (e.g. "Basic dTpw"); empty: none`)
	flag.Parse()
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "registryfake:", err)
		os.Exit(1)
	}
	fmt.Printf("registry http://%s\n", l.Addr())
	if err := http.Serve(l, newServer(*auth).handler()); err != nil {
		fmt.Fprintln(os.Stderr, "registryfake:", err)
		os.Exit(1)
	}
}
