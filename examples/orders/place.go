package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxrelay/outboxrelay/outbox"
)

// OrderPlaced is the event: everything the loyalty service needs, fixed
// when the order is written.
type OrderPlaced struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int    `json:"total_cents"`
}

// place runs --writers concurrent writers placing --orders orders in all.
func place(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("place", flag.ContinueOnError)
	orders := fl.Int("orders", 2000, "orders to attempt, in all")
	writers := fl.Int("writers", 4, "concurrent writers")
	dupRate := fl.Float64("dup-rate", 0.1, "share of attempts that reuse an order reference and roll back")
	customers := fl.Int("customers", 50, "distinct customers")
	pause := fl.Duration("pause", 0, "pause between one writer's orders")
	seed := fl.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
	rolledBackOut := fl.String("rolled-back-out", "", "file to write the ids of rolled-back orders to, one a line")
	e, err := parseFlags(ctx, fl, args)
	if err != nil {
		return err
	}
	defer e.pool.Close()
	w, err := outbox.New(ctx, e.pool, e.opts)
	if err != nil {
		return err
	}
	tracer, stopTracing, err := shopTracer(ctx)
	if err != nil {
		return err
	}
	defer stopTracing()
	var mu sync.Mutex
	var placed, rolledBack int
	var rolledBackIDs []string
	var wg sync.WaitGroup
	errs := make(chan error, *writers)
	for n := range *writers {
		share := *orders / *writers
		if n < *orders%*writers {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(*seed, uint64(n)))
			var refs []string // this writer's committed order references
			for i := range share {
				ref := fmt.Sprintf("w%d-%d", n, i)
				if len(refs) > 0 && rng.Float64() < *dupRate {
					ref = refs[rng.IntN(len(refs))] // a double submit
				}
				o := OrderPlaced{OrderID: outbox.NewID(), CustomerID: customerID(rng.IntN(*customers)), TotalCents: 100 + rng.IntN(20000)}
				ok, err := placeTraced(ctx, tracer, e, w, ref, o)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if ok {
					placed++
					refs = append(refs, ref)
				} else {
					rolledBack++
					rolledBackIDs = append(rolledBackIDs, o.OrderID)
				}
				mu.Unlock()
				if *pause > 0 {
					time.Sleep(*pause)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if *rolledBackOut != "" {
		if err := os.WriteFile(*rolledBackOut, []byte(strings.Join(rolledBackIDs, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("orders placed: %d, rolled back (duplicate order reference): %d\n", placed, rolledBack)
	return nil
}

// shopTracer is the shop's tracer, nil when tracing is off.
func shopTracer(ctx context.Context) (trace.Tracer, func(), error) {
	tp, stop, err := startTracing(ctx, "orders-shop")
	if err != nil || tp == nil {
		return nil, stop, err
	}
	return tp.Tracer("orders-shop"), stop, nil
}

// placeTraced is placeOrder in a span of its own, as a service handles a
// request ("POST /orders"): the outbox row gets its context, so the relay's
// and the consumer's spans join its trace. A nil tracer: no span.
func placeTraced(ctx context.Context, tracer trace.Tracer, e *env, w *outbox.Writer, ref string, o OrderPlaced) (bool, error) {
	if tracer == nil {
		return placeOrder(ctx, e, w, ref, o)
	}
	ctx, span := tracer.Start(ctx, "POST /orders", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("order.id", o.OrderID), attribute.String("order.ref", ref)))
	defer span.End()
	ok, err := placeOrder(ctx, e, w, ref, o)
	span.SetAttributes(attribute.Bool("order.committed", ok))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if !ok {
		span.SetStatus(codes.Error, "duplicate order reference: rolled back")
	}
	return ok, err
}

// placeOrder writes the event and the order in one transaction. It
// reports false when the order's reference was taken: the unique-key
// violation rolls back the event written just before it.
func placeOrder(ctx context.Context, e *env, w *outbox.Writer, ref string, o OrderPlaced) (bool, error) {
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if err := w.Write(ctx, tx, outbox.Event{AggregateType: orderType, AggregateID: o.OrderID, Payload: o}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+e.table("orders")+` (id, order_ref, customer_id, total_cents) VALUES ($1, $2, $3, $4)`,
			o.OrderID, ref, o.CustomerID, o.TotalCents)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("placing order %s: %w", ref, err)
	}
	return true, nil
}

func customerID(n int) string {
	return fmt.Sprintf("00000000-0000-7000-8000-%012d", n)
}
