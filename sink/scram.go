package sink

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go/sasl"
)

// SCRAM (RFC 5802) client for kafka-go's sasl.Mechanism. kafka-go's own
// sasl/scram package needs github.com/xdg-go/scram, which this module does
// not carry; the standard library has everything SCRAM needs.

type scramHash struct {
	name string
	new  func() hash.Hash
}

var (
	scramSHA256 = scramHash{"SCRAM-SHA-256", sha256.New}
	scramSHA512 = scramHash{"SCRAM-SHA-512", sha512.New}
)

type scramMechanism struct {
	h        scramHash
	user     string
	password string
	// nonce is nil in production (random); tests pin it to check RFC vectors.
	nonce func() string
}

func newSCRAM(h scramHash, user, password string) *scramMechanism {
	return &scramMechanism{h: h, user: user, password: password}
}

func (m *scramMechanism) Name() string { return m.h.name }

// String keeps the password out of any %v of the transport.
func (m *scramMechanism) String() string { return m.h.name + " user=" + m.user }

func (m *scramMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	nonce := ""
	if m.nonce != nil {
		nonce = m.nonce()
	} else {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, nil, fmt.Errorf("scram: nonce: %w", err)
		}
		nonce = base64.RawStdEncoding.EncodeToString(b)
	}
	// Usernames escape ',' and '=' (RFC 5802 5.1); Kafka does no SASLprep.
	user := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(m.user)
	s := &scramSession{m: m, nonce: nonce, bare: "n=" + user + ",r=" + nonce}
	return s, []byte("n,," + s.bare), nil
}

type scramSession struct {
	m         *scramMechanism
	nonce     string
	bare      string
	serverSig []byte
	step      int
}

func (s *scramSession) Next(ctx context.Context, challenge []byte) (bool, []byte, error) {
	s.step++
	switch s.step {
	case 1:
		resp, err := s.clientFinal(string(challenge))
		return false, resp, err
	case 2:
		return true, nil, s.verifyServer(string(challenge))
	}
	return false, nil, errors.New("scram: unexpected extra challenge")
}

func (s *scramSession) clientFinal(first string) ([]byte, error) {
	attrs := scramAttrs(first)
	r, salt64, iter := attrs["r"], attrs["s"], attrs["i"]
	if !strings.HasPrefix(r, s.nonce) || len(r) == len(s.nonce) {
		return nil, errors.New("scram: server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		return nil, fmt.Errorf("scram: server salt: %w", err)
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("scram: server iteration count %q", iter)
	}
	salted, err := pbkdf2.Key(s.m.h.new, s.m.password, salt, n, s.m.h.new().Size())
	if err != nil {
		return nil, fmt.Errorf("scram: deriving key: %w", err)
	}
	clientKey := s.hmac(salted, "Client Key")
	storedKey := s.sum(clientKey)
	withoutProof := "c=biws,r=" + r // biws = base64("n,,")
	authMsg := s.bare + "," + first + "," + withoutProof
	sig := s.hmac(storedKey, authMsg)
	proof := make([]byte, len(clientKey))
	for i := range clientKey {
		proof[i] = clientKey[i] ^ sig[i]
	}
	s.serverSig = s.hmac(s.hmac(salted, "Server Key"), authMsg)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

func (s *scramSession) verifyServer(final string) error {
	attrs := scramAttrs(final)
	if e, ok := attrs["e"]; ok {
		return fmt.Errorf("scram: server rejected authentication: %s", e)
	}
	v, err := base64.StdEncoding.DecodeString(attrs["v"])
	if err != nil || !hmac.Equal(v, s.serverSig) {
		return errors.New("scram: server signature does not match (not the broker we trust)")
	}
	return nil
}

func (s *scramSession) hmac(key []byte, msg string) []byte {
	h := hmac.New(s.m.h.new, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func (s *scramSession) sum(b []byte) []byte {
	h := s.m.h.new()
	h.Write(b)
	return h.Sum(nil)
}

func scramAttrs(msg string) map[string]string {
	out := make(map[string]string)
	for _, part := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && len(k) == 1 {
			out[k] = v
		}
	}
	return out
}
