package sink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxrelay/outboxrelay/router"
)

// RFC 7677 section 3: the SCRAM-SHA-256 exchange for user "user", password
// "pencil".
func TestSCRAMRFC7677(t *testing.T) {
	m := newSCRAM(scramSHA256, "user", "pencil")
	m.nonce = func() string { return "rOprNGfwEbeRWgbNEkqO" }
	sess, first, err := m.Start(context.Background())
	if err != nil || string(first) != "n,,n=user,r=rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("client-first %q, %v", first, err)
	}
	done, final, err := sess.Next(context.Background(), []byte("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"))
	want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	if err != nil || done || string(final) != want {
		t.Fatalf("client-final %q, %v, %v", final, done, err)
	}
	done, _, err = sess.Next(context.Background(), []byte("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="))
	if err != nil || !done {
		t.Fatalf("server-final: %v %v", done, err)
	}
	sess, _, _ = m.Start(context.Background())
	sess.Next(context.Background(), []byte("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"))
	if _, _, err := sess.Next(context.Background(), []byte("v=AAAA")); err == nil {
		t.Fatal("a wrong server signature was accepted")
	}
}

// SASL against kfake: PLAIN and both SCRAM sizes. kfake answers a wrong
// password by closing the connection (a real broker answers
// SASL_AUTHENTICATION_FAILED first), so the wrong-password case, which
// retryable treats as fatal, needs the real broker.
func TestSASLAgainstKfake(t *testing.T) {
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		t.Run(mech, func(t *testing.T) {
			_, addr := newCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "relay", "right-pw"), kfake.SeedTopics(1, "orders"))
			for _, pw := range []string{"right-pw"} {
				cfg, err := ParseConfig(map[string]string{
					"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech,
					"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="relay" password="` + pw + `";`,
					"retry.backoff.ms": "5", "retry.backoff.max.ms": "20",
				})
				if err != nil {
					t.Fatal(err)
				}
				p := newTestProducer(t, cfg)
				a := newAcks()
				if err := p.Send(context.Background(), router.Record{Topic: "orders", Partition: -1, Key: []byte("k"), Value: []byte("v"), EventID: "ev"}, a.cb("ev")); err != nil {
					t.Fatal(err)
				}
				flush(t, p, 20*time.Second)
				err = a.err("ev")
				if pw == "right-pw" && err != nil {
					t.Fatalf("right password: %v", err)
				}
			}
		})
	}
}
