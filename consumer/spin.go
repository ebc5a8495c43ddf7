package consumer

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

// spinEvery is how often watchSpin reads the reader's counters.
const spinEvery = 10 * time.Second

// spinFetchesPerSecond is the fetch rate, with no message read, that
// watchSpin takes for a reader stuck on an answer it cannot decode. An idle
// partition costs one fetch per MaxWait (a second): a reader needs a
// thousand idle partitions to reach it.
const spinFetchesPerSecond = 1000

// watchSpin WARNs while r fetches in a tight loop and reads nothing: what
// kafka-go's reader does, silently, with a record batch whose record count
// is negative (segmentio/kafka-go#1438: it decodes no record, fetches the
// same offset again at once, tens of thousands of times a second, and
// FetchMessage never returns). It reads r.Stats, which no other code of
// the package reads (Stats resets the counters), at each tick of every, until ctx
// ends.
func (c *Consumer) watchSpin(ctx context.Context, r *kafka.Reader, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	r.Stats() // from now
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := r.Stats()
		if st.Messages == 0 && float64(st.Fetches) >= spinFetchesPerSecond*every.Seconds() {
			c.cfg.Logger.Warn("consumer: the reader fetches in a loop and reads no message: a broker's answer kafka-go cannot decode (a malformed record batch, such as a negative record count: segmentio/kafka-go#1438); the partition is stuck at its offset; check the topic's records with kafka-dump-log and the brokers' health",
				"consumer", c.cfg.Name, "topics", c.cfg.Topics, "fetches", st.Fetches, "interval", every)
		}
	}
}
