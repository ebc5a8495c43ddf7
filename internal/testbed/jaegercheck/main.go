// Command jaegercheck is the assertion of `make trace-test`
// (scripts/trace-test): it reads the traces of one examples/orders run back
// through Jaeger's query API (/api/traces) and checks that, for every order
// committed in the run's schema, the shop's request span, the relay's
// db-log-write and publish spans and the loyalty consumer's span form one
// trace, each the child of the one before, and that no rolled-back order
// has relay spans. It prints one such trace as a tree.
//
//	jaegercheck -query http://127.0.0.1:16686 -schema shop -database $DATABASE_URL
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The services and span names of the run (examples/orders, the relay's
// defaults).
const (
	shopService    = "orders-shop"
	relayService   = "outboxrelay"
	loyaltyService = "orders-loyalty"
	requestSpan    = "POST /orders"
	outboxSpan     = "db-log-write"
	publishSpan    = "debezium-read"
)

func main() {
	query := flag.String("query", os.Getenv("OUTBOXRELAY_JAEGER_QUERY"), "Jaeger's query API base URL")
	schema := flag.String("schema", "shop", "the run's schema (its orders table holds the committed orders)")
	topic := flag.String("topic", "", "the orders' topic: the consumer's span is \"process <topic>\"")
	database := flag.String("database", os.Getenv("DATABASE_URL"), "PostgreSQL URL")
	wait := flag.Duration("wait", 60*time.Second, "how long to wait for every trace to be complete")
	flag.Parse()
	if err := run(*query, *schema, *topic, *database, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "jaegercheck:", err)
		os.Exit(1)
	}
}

func run(query, schema, topic, database string, wait time.Duration) error {
	ctx := context.Background()
	committed, err := committedOrders(ctx, database, schema)
	if err != nil {
		return err
	}
	if len(committed) == 0 {
		return errors.New("no committed order in " + schema + ".orders: nothing to check")
	}
	deadline := time.Now().Add(wait)
	for {
		traces, err := fetchTraces(ctx, query, shopService, 10*len(committed)+100)
		if err != nil {
			return err
		}
		res := check(traces, committed, topic)
		if res.err == nil || time.Now().After(deadline) {
			if res.err != nil {
				return res.err
			}
			fmt.Printf("jaegercheck: %d committed orders, each one trace of %s → %s → %s → process %s; %d rolled-back orders without relay spans\n",
				len(committed), requestSpan, outboxSpan, publishSpan, topic, res.rolledBack)
			fmt.Println(res.example)
			return nil
		}
		time.Sleep(time.Second)
	}
}

// committedOrders is the ids of the orders the run committed.
func committedOrders(ctx context.Context, database, schema string) (map[string]bool, error) {
	conn, err := pgx.Connect(ctx, database)
	if err != nil {
		return nil, fmt.Errorf("connecting to -database: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id::text FROM `+pgx.Identifier{schema, "orders"}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("reading the committed orders: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// The query API's JSON, as much as is read here.
type jTrace struct {
	TraceID   string              `json:"traceID"`
	Spans     []jSpan             `json:"spans"`
	Processes map[string]jProcess `json:"processes"`
}

type jSpan struct {
	SpanID     string `json:"spanID"`
	Operation  string `json:"operationName"`
	References []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

type jProcess struct {
	ServiceName string `json:"serviceName"`
}

func (s *jSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s *jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func fetchTraces(ctx context.Context, query, service string, limit int) ([]jTrace, error) {
	u := strings.TrimRight(query, "/") + "/api/traces?" + url.Values{
		"service": {service}, "limit": {fmt.Sprint(limit)}, "lookback": {"2h"},
	}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying Jaeger (%s): %w", u, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<30))
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("querying Jaeger (%s): %s %v: %.300s", u, res.Status, err, body)
	}
	var out struct {
		Data []jTrace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding Jaeger's answer: %w", err)
	}
	return out.Data, nil
}

type result struct {
	err        error
	rolledBack int
	example    string
}

// check finds, for every committed order, its request span and the chain
// below it.
func check(traces []jTrace, committed map[string]bool, topic string) result {
	found := map[string]bool{}
	var res result
	var problems []string
	for _, tr := range traces {
		byID := map[string]*jSpan{}
		for i := range tr.Spans {
			byID[tr.Spans[i].SpanID] = &tr.Spans[i]
		}
		service := func(s *jSpan) string { return tr.Processes[s.ProcessID].ServiceName }
		for i := range tr.Spans {
			req := &tr.Spans[i]
			if req.Operation != requestSpan || service(req) != shopService {
				continue
			}
			order := req.tag("order.id")
			chain := childChain(tr.Spans, req, service, topic)
			switch {
			case !committed[order] && len(chain) > 0:
				problems = append(problems, fmt.Sprintf("order %s rolled back but trace %s has relay spans", order, tr.TraceID))
			case !committed[order]:
				res.rolledBack++
			case len(chain) != 3:
				problems = append(problems, fmt.Sprintf("order %s: trace %s has %d of the 3 spans below %s", order, tr.TraceID, len(chain), requestSpan))
			case chain[1].tag("messaging.kafka.message.key") != order:
				problems = append(problems, fmt.Sprintf("order %s: the publish span's key is %q", order, chain[1].tag("messaging.kafka.message.key")))
			default:
				found[order] = true
				if res.example == "" {
					res.example = render(tr, req, chain, service)
				}
			}
		}
	}
	var missing []string
	for id := range committed {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d committed orders have no complete trace (first: %s)", len(missing), len(committed), missing[0]))
	}
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("… %d more", len(problems)-5))
		}
		res.err = errors.New(strings.Join(problems, "; "))
	}
	return res
}

// childChain is db-log-write (relay) under req, debezium-read under it, and
// the consumer's span under that, as far as they exist.
func childChain(spans []jSpan, req *jSpan, service func(*jSpan) string, topic string) []*jSpan {
	want := []struct{ service, name string }{{relayService, outboxSpan}, {relayService, publishSpan}, {loyaltyService, "process " + topic}}
	var chain []*jSpan
	parent := req
	for _, w := range want {
		var next *jSpan
		for i := range spans {
			s := &spans[i]
			name := s.Operation == w.name || (topic == "" && w.service == loyaltyService && strings.HasPrefix(s.Operation, "process "))
			if s.parent() == parent.SpanID && name && service(s) == w.service {
				next = s
			}
		}
		if next == nil {
			break
		}
		chain = append(chain, next)
		parent = next
	}
	return chain
}

// render prints the trace as a tree with each span's offset and length.
func render(tr jTrace, req *jSpan, chain []*jSpan, service func(*jSpan) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s\n", tr.TraceID)
	t0 := req.StartTime
	for depth, s := range append([]*jSpan{req}, chain...) {
		fmt.Fprintf(&b, "%s%-*s %-16s +%8.3f ms  %8.3f ms", strings.Repeat("  ", depth), 30-2*depth, s.Operation, service(s),
			float64(s.StartTime-t0)/1000, float64(s.Duration)/1000)
		for _, k := range []string{"order.id", "db.system.name", "outboxrelay.lsn", "messaging.destination.name", "messaging.destination.partition.id", "messaging.kafka.offset", "messaging.consumer.group.name"} {
			if v := s.tag(k); v != "" {
				fmt.Fprintf(&b, "  %s=%s", k, v)
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
