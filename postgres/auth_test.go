package postgres

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeServer is a PostgreSQL impostor on 127.0.0.1: it answers an
// SSLRequest with 'N' (or, with tlsCert, accepts TLS with a self-signed
// certificate), then asks for a password with auth (a cleartext or an md5
// request) and records every password it receives.
type fakeServer struct {
	auth    pgproto3.BackendMessage
	tlsCert *tls.Certificate

	mu        sync.Mutex
	passwords []string
	startups  int
}

func (f *fakeServer) serve(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.handle(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func (f *fakeServer) handle(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var conn net.Conn = c
	b := pgproto3.NewBackend(conn, conn)
	for {
		msg, err := b.ReceiveStartupMessage()
		if err != nil {
			return
		}
		if _, ok := msg.(*pgproto3.SSLRequest); !ok {
			break
		}
		if f.tlsCert == nil {
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		}
		if _, err := conn.Write([]byte{'S'}); err != nil {
			return
		}
		conn = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*f.tlsCert}})
		b = pgproto3.NewBackend(conn, conn)
	}
	f.mu.Lock()
	f.startups++
	f.mu.Unlock()
	authType := uint32(pgproto3.AuthTypeCleartextPassword)
	if _, ok := f.auth.(*pgproto3.AuthenticationMD5Password); ok {
		authType = pgproto3.AuthTypeMD5Password
	}
	b.Send(f.auth)
	if b.Flush() != nil || b.SetAuthType(authType) != nil {
		return
	}
	msg, err := b.Receive()
	if err != nil {
		return
	}
	if p, ok := msg.(*pgproto3.PasswordMessage); ok {
		f.mu.Lock()
		f.passwords = append(f.passwords, p.Password)
		f.mu.Unlock()
	}
	b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: "password authentication failed"})
	b.Flush()
}

func (f *fakeServer) seen() (startups int, passwords []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.startups, append([]string(nil), f.passwords...)
}

func selfSigned(t *testing.T) *tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "impostor"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Regression (issue 27, item 1): with the default database.sslmode=prefer
// the password went in clear text to a server that refused TLS and asked
// for a cleartext password; with require, through TLS to a server with any
// self-signed certificate; an md5 request got a replayable hash. With the
// default database.require_auth the impostor never receives the password,
// and the error names the key and what to set; it is not retried.
func TestPasswordNeverGoesToAnImpostor(t *testing.T) {
	const secret = "s3cret-pw"
	for _, tc := range []struct {
		name, sslmode string
		auth          pgproto3.BackendMessage
		tls           bool
	}{
		{"prefer, cleartext", "prefer", &pgproto3.AuthenticationCleartextPassword{}, false},
		{"require, cleartext, TLS refused", "require", &pgproto3.AuthenticationCleartextPassword{}, false},
		{"require, cleartext, self-signed TLS", "require", &pgproto3.AuthenticationCleartextPassword{}, true},
		{"prefer, md5", "prefer", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}, false},
		{"require, md5, self-signed TLS", "require", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}, true},
		{"default sslmode, cleartext", "", &pgproto3.AuthenticationCleartextPassword{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{auth: tc.auth}
			if tc.tls {
				f.tlsCert = selfSigned(t)
			}
			port := f.serve(t)
			m := baseConfig()
			m["database.port"], m["database.password"] = strconv.Itoa(port), secret
			if tc.sslmode != "" {
				m["database.sslmode"] = tc.sslmode
			}
			cfg, err := ParseConfig(m)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			conn, err := cfg.Connect(ctx)
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connected to the impostor")
			}
			startups, passwords := f.seen()
			if len(passwords) > 0 {
				t.Fatalf("the impostor received %q", passwords)
			}
			if tc.sslmode == "require" && !tc.tls {
				// require refuses a server without TLS before the startup message.
				if startups != 0 || !strings.Contains(err.Error(), "TLS") {
					t.Errorf("startups %d, err %v", startups, err)
				}
				return
			}
			if startups == 0 {
				t.Fatalf("the impostor was never asked: %v", err)
			}
			msg := err.Error()
			t.Logf("refusal: %s", msg)
			if !errors.Is(err, ErrAuthMethod) || !strings.Contains(msg, "database.require_auth") || !strings.Contains(msg, "scram-sha-256") || strings.Contains(msg, secret) {
				t.Errorf("err %v; want ErrAuthMethod naming database.require_auth and what to set, without the password", err)
			}
			if Retryable(err) {
				t.Errorf("Retryable(%v) = true; the server asks the same next time", err)
			}
		})
	}
}

// TestRequireAuthOptOut: a user who allows the method (the opt-out the
// refusal names) connects as before; the impostor then receives it, which
// shows the fake server above asks in earnest.
func TestRequireAuthOptOut(t *testing.T) {
	for _, tc := range []struct {
		requireAuth string
		auth        pgproto3.BackendMessage
		want        string
	}{
		{"scram-sha-256,none,password", &pgproto3.AuthenticationCleartextPassword{}, "pw"},
		{"!gss", &pgproto3.AuthenticationCleartextPassword{}, "pw"},
		{"scram-sha-256,none,md5", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}, "md5"},
	} {
		f := &fakeServer{auth: tc.auth}
		m := baseConfig()
		m["database.port"], m["database.password"], m["database.require_auth"] = strconv.Itoa(f.serve(t)), "pw", tc.requireAuth
		cfg, err := ParseConfig(m)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err = cfg.Connect(ctx)
		cancel()
		if _, passwords := f.seen(); len(passwords) == 0 || !strings.HasPrefix(passwords[0], tc.want) || errors.Is(err, ErrAuthMethod) {
			t.Errorf("require_auth %q: received %q, err %v", tc.requireAuth, passwords, err)
		}
	}
}

// TestRequireAuthKeys: database.require_auth and database.channel_binding
// are read as libpq reads them, refusals naming the key.
func TestRequireAuthKeys(t *testing.T) {
	cfg, err := ParseConfig(baseConfig())
	if err != nil || cfg.RequireAuth != DefaultRequireAuth || cfg.ChannelBinding != "prefer" {
		t.Fatalf("defaults: %q %q %v", cfg.RequireAuth, cfg.ChannelBinding, err)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"database.require_auth", "scram-sha-256,!md5", "mixes"},
		{"database.require_auth", "md5,md5", "twice"},
		{"database.require_auth", "kerberos", "not a libpq method"},
		{"database.channel_binding", "always", "database.channel_binding"},
	} {
		m := baseConfig()
		m[tc.key] = tc.value
		if _, err := ParseConfig(m); err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v; want an error naming the key (%s)", tc.key, tc.value, err, tc.want)
		}
	}
	m := baseConfig()
	m["database.require_auth"], m["database.channel_binding"] = "SCRAM-SHA-256", "Require"
	cfg, err = ParseConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cfg.ConnConfig()
	if err != nil || cc.RequireAuth != "scram-sha-256" || cc.ChannelBinding != "require" {
		t.Errorf("ConnConfig: require_auth %q channel_binding %q, %v", cc.RequireAuth, cc.ChannelBinding, err)
	}
}
