package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// callTimeout bounds one call of the client, every URL tried included;
// the call's first URL may use all of it, and a later URL that it leaves
// too little is tried first, with all of it, by the retry (Client.do).
// The relay's session waits for the call on its own goroutine, which also
// owns the replication connection: while it waits no standby status update
// goes to PostgreSQL, so the wait must stay well below the status interval
// (status.update.interval.ms, 10 s by default) and far below
// wal_sender_timeout (60 s by default). Between calls that failed the
// session sends its keepalives and retries (relay/convert.go). Confluent's
// client waits up to its http.read.timeout.ms (60 s) per URL; a registry
// that hangs would silence the relay for that long.
const callTimeout = 5 * time.Second

// maxResponse bounds a response body read: a schema is a few kilobytes;
// a list of subjects of a large registry some hundred.
const maxResponse = 8 << 20

// maxTLSFile bounds a PEM file read (as the sink's).
const maxTLSFile = 1 << 20

// contentType is the registry's JSON media type.
const contentType = "application/vnd.schemaregistry.v1+json"

// Client speaks Confluent Schema Registry's REST API to one registry,
// reachable at several URLs tried in turn. It is safe for concurrent use.
type Client struct {
	urls   []string
	http   *http.Client
	user   string
	pass   string
	bearer string
	prefix string // the side's key prefix, for errors naming keys
	// next is the index of the URL a call tries first: the one after the
	// last that failed on its own, as Confluent's UrlList.fail, so that a
	// URL that hangs costs one call its timeout, not every call; a URL
	// that the call's deadline cut short after slower URLs before it is
	// not passed over (do).
	next atomic.Int32
	// timeout bounds one call (callTimeout; tests shorten it).
	timeout time.Duration
}

// NewClient returns the client of one converter's registry; it reads its
// TLS files, and does not connect.
func NewClient(s Side) (*Client, error) {
	if len(s.URLs) == 0 {
		// ParseConfig refuses such a Side; do divides by len(urls).
		return nil, fmt.Errorf("%sschema.registry.url lists no URL; set it to the registry's URL, e.g. http://127.0.0.1:8081", s.Prefix())
	}
	tc, err := tlsConfig(s)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 4
	return &Client{
		urls: s.URLs, http: &http.Client{Transport: tr},
		user: s.User, pass: s.Password, bearer: s.BearerToken, prefix: s.Prefix(),
		timeout: callTimeout,
	}, nil
}

// tlsConfig reads the PEM files of schema.registry.ssl.*.
func tlsConfig(s Side) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	key := s.Prefix() + "schema.registry.ssl."
	if s.TLSCAFile != "" {
		pem, err := config.ReadFile(s.TLSCAFile, maxTLSFile, "a TLS file ("+key+"truststore.location)")
		if err != nil {
			return nil, fmt.Errorf("reading %struststore.location: %w", key, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%struststore.location=%s: no PEM certificate found in the file", key, s.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	if s.TLSKeyFile != "" {
		pem, err := config.ReadFile(s.TLSKeyFile, maxTLSFile, "a TLS file ("+key+"keystore.location)")
		if err != nil {
			return nil, fmt.Errorf("reading %skeystore.location: %w", key, err)
		}
		cert, err := tls.X509KeyPair(pem, pem)
		if err != nil {
			return nil, fmt.Errorf("%skeystore.location=%s: want one PEM file with the certificate chain and an unencrypted key: %w", key, s.TLSKeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Error is an answer of the registry other than success: the HTTP status,
// and the registry's error_code and message when its body had them.
type Error struct {
	Op      string // what was asked: "registering a schema under subject s"
	URL     string // the base URL that answered
	Status  int
	Code    int // the registry's error_code (e.g. 409, 42201, 40401); 0 if none
	Message string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != 0 {
		return fmt.Sprintf("%s: %s answered HTTP %d, error code %d: %s", e.Op, e.URL, e.Status, e.Code, msg)
	}
	return fmt.Sprintf("%s: %s answered HTTP %d: %s", e.Op, e.URL, e.Status, msg)
}

// Unavailable reports whether the registry may answer otherwise later: a
// 5xx (or 408, 429), as opposed to a refusal of the request.
func (e *Error) Unavailable() bool {
	return e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests
}

// Unauthorized reports a 401 or 403: the credentials are wrong or lack
// the permission; retrying cannot help.
func (e *Error) Unauthorized() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// NetError is a request that got no answer from any URL (connection
// refused, timeout, TLS): the registry may be back later, unless the
// certificate did not verify.
type NetError struct {
	Op  string
	Err error // the last URL's
}

func (e *NetError) Error() string { return fmt.Sprintf("%s: no answer: %v", e.Op, e.Err) }
func (e *NetError) Unwrap() error { return e.Err }

// SubjectSchema is a registered schema under a subject.
type SubjectSchema struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int    `json:"id"`
	SchemaType string `json:"schemaType"` // "" is AVRO
	Schema     string `json:"schema"`
}

// subjectSchemaJSON is SubjectSchema as the registry writes it, its id
// kept raw for validID.
type subjectSchemaJSON struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         json.RawMessage `json:"id"`
	SchemaType string          `json:"schemaType"`
	Schema     string          `json:"schema"`
}

// AnswerError is a success answer the client refuses: a schema id that
// is not an integer from 1 to 2^31-1. Confluent's registry allocates ids
// from 1 (a Java int), and the wire format holds them in 4 bytes that its
// deserializers read as a signed int: a record written with id 0, a
// negative id or a larger one would name no schema. No record is written
// with it.
type AnswerError struct {
	Op     string
	URL    string // the base URL that answered
	Answer string // the id as answered (at most 64 bytes of it)
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("%s: %s answered schema id %s, which is not an id (an integer from 1 to 2147483647): the registry at that URL is misbehaving", e.Op, e.URL, e.Answer)
}

// validID returns the schema id in raw, a JSON integer from 1 to 2^31-1.
func validID(op, base string, raw json.RawMessage) (int, error) {
	id, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil || id < 1 {
		answer := string(raw)
		if answer == "" {
			answer = "(none)"
		} else if len(answer) > 64 {
			answer = answer[:64] + "…"
		}
		return 0, &AnswerError{Op: op, URL: base, Answer: answer}
	}
	return int(id), nil
}

// schemaRequest is RegisterSchemaRequest's body.
type schemaRequest struct {
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType,omitempty"`
}

// Register registers schema under subject (POST
// /subjects/{subject}/versions, as RestService.registerSchema) and returns
// its id; registering a schema the subject holds already returns its id
// and adds no version. schemaType "AVRO" is sent as no type, as
// Confluent's client does.
func (c *Client) Register(ctx context.Context, subject, schemaType, schema string) (int, error) {
	var id int
	op := "registering a schema under subject " + strconv.Quote(subject)
	err := c.do(ctx, op, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions?normalize=false", request(schemaType, schema), func(base string, data []byte) error {
		var out struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(data, &out); err != nil {
			return err
		}
		var err error
		id, err = validID(op, base, out.ID)
		return err
	})
	return id, err
}

// Lookup returns the id of schema under subject without registering it
// (POST /subjects/{subject}, as RestService.lookUpSubjectVersion: what
// auto.register.schemas=false does); a schema the subject does not hold
// is an Error with status 404 (error code 40401 or 40403).
func (c *Client) Lookup(ctx context.Context, subject, schemaType, schema string) (SubjectSchema, error) {
	var out SubjectSchema
	op := "looking up a schema under subject " + strconv.Quote(subject)
	err := c.do(ctx, op, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"?normalize=false&deleted=false", request(schemaType, schema), subjectSchema(op, &out))
	return out, err
}

// Latest returns the subject's latest version (GET
// /subjects/{subject}/versions/latest: use.latest.version).
func (c *Client) Latest(ctx context.Context, subject string) (SubjectSchema, error) {
	var out SubjectSchema
	op := "reading the latest schema of subject " + strconv.Quote(subject)
	err := c.do(ctx, op, http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", nil, subjectSchema(op, &out))
	return out, err
}

// into returns the decoder of an answer into v.
func into(v any) func(string, []byte) error {
	return func(_ string, data []byte) error { return json.Unmarshal(data, v) }
}

// subjectSchema returns the decoder of a SubjectSchema answer into out.
func subjectSchema(op string, out *SubjectSchema) func(string, []byte) error {
	return func(base string, data []byte) error {
		var in subjectSchemaJSON
		if err := json.Unmarshal(data, &in); err != nil {
			return err
		}
		id, err := validID(op, base, in.ID)
		if err != nil {
			return err
		}
		*out = SubjectSchema{Subject: in.Subject, Version: in.Version, ID: id, SchemaType: in.SchemaType, Schema: in.Schema}
		return nil
	}
}

// Subjects lists the registry's subjects (GET /subjects).
func (c *Client) Subjects(ctx context.Context) ([]string, error) {
	var out []string
	err := c.do(ctx, "listing subjects", http.MethodGet, "/subjects", nil, func(_ string, data []byte) error { return json.Unmarshal(data, &out) })
	return out, err
}

func request(schemaType, schema string) []byte {
	r := schemaRequest{Schema: schema}
	if schemaType != "AVRO" {
		r.SchemaType = schemaType
	}
	b, _ := json.Marshal(r) // two strings: cannot fail
	return b
}

// do sends one request to each URL in turn, starting with c.next, until
// one answers; a 5xx answer or an answer that is not valid (an
// AnswerError) also moves on to the next URL. The whole call is bounded by
// c.timeout: a registry that accepts connections and never answers is a
// NetError after it, like one that refuses them. The last failure is
// returned. decode reads a success answer's body from the URL base.
//
// c.next moves past a URL only when the URL failed on its own: it
// answered 5xx or an AnswerError, could not be reached, or was the call's
// first URL and so had the call's whole budget and used it up. A later URL
// that runs into the call's deadline was starved by the URLs before it
// (one that answers 503 after 4.7 s leaves the next 0.3 s): it is not
// blamed, c.next stays on it, and the retry starts with it and gives it
// the whole budget. Blaming it instead sent every call back to the slow
// URL first, and every call failed while a healthy URL was there. So each
// URL that answers within c.timeout is reached by the retry at the latest;
// the price is one more call when that later URL hangs too.
func (c *Client) do(ctx context.Context, op, method, path string, body []byte, decode func(base string, data []byte) error) error {
	call, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	deadline, _ := call.Deadline()
	var last error
	first := int(c.next.Load()) % len(c.urls)
	for n := range len(c.urls) {
		i := (first + n) % len(c.urls)
		budget := time.Until(deadline)
		err := c.once(call, op, method, c.urls[i], path, body, decode)
		if err == nil {
			return nil
		}
		var e *Error
		if errors.As(err, &e) && !e.Unavailable() || ctx.Err() != nil {
			return err
		}
		if call.Err() != nil && n > 0 {
			// Starved: each URL before it moved c.next on, to i (unless
			// a concurrent call moved it meanwhile), and it stays there.
			return fmt.Errorf("%w (the call's %s passed while %s had only %s of it, after %v; the retry starts at %s with the whole %s)",
				err, c.timeout, c.urls[i], budget.Round(time.Millisecond), last, c.urls[i], c.timeout)
		}
		last = err
		c.next.CompareAndSwap(int32(i), int32((i+1)%len(c.urls)))
		if call.Err() != nil {
			return fmt.Errorf("%w (the call's %s passed: the registry at %s hangs or is overloaded; retrying from the next URL)", err, c.timeout, c.urls[i])
		}
	}
	return last
}

func (c *Client) once(ctx context.Context, op, method, base, path string, body []byte, decode func(string, []byte) error) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", contentType)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &NetError{Op: op, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return &NetError{Op: op, Err: fmt.Errorf("reading the answer of %s: %w", base, err)}
	}
	if len(data) > maxResponse {
		return fmt.Errorf("%s: %s answered more than %d bytes", op, base, maxResponse)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Op: op, URL: base, Status: resp.StatusCode}
		var body struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &body) == nil {
			e.Code, e.Message = body.Code, body.Message
		}
		return e
	}
	if err := decode(base, data); err != nil {
		var ae *AnswerError
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("%s: %s answered HTTP %d with a body that is not the registry's JSON: %w", op, base, resp.StatusCode, err)
	}
	return nil
}
