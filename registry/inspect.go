package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/outboxrelay/outboxrelay/router"
)

// Compatible asks whether schema may be registered next under subject
// (POST /compatibility/subjects/{subject}/versions/latest?verbose=true);
// messages say why not, when the registry tells. A subject without
// versions is an Error with status 404.
func (c *Client) Compatible(ctx context.Context, subject, schemaType, schema string) (ok bool, messages []string, _ error) {
	var out struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	op := "checking a schema's compatibility with subject " + strconv.Quote(subject)
	err := c.do(ctx, op, http.MethodPost, "/compatibility/subjects/"+url.PathEscape(subject)+"/versions/latest?verbose=true", request(schemaType, schema), into(&out))
	return out.IsCompatible, out.Messages, err
}

// Subject is what check reports of one subject a record would be written
// under.
type Subject struct {
	Name  string // the subject
	IsKey bool
	// Latest is the subject's latest version; zero Version when the
	// subject has none yet (the next schema starts it).
	Latest SubjectSchema
	// Compatible: the record's schema may be registered next (always true
	// for a new subject); Messages say why not.
	Compatible bool
	Messages   []string
}

// Ping reaches the side's registry with its credentials: the number of
// subjects it lists.
func (c *Converter) Ping(ctx context.Context) (isKey bool, subjects int, err error) {
	for _, s := range []*side{c.value, c.key} {
		if s == nil {
			continue
		}
		list, err := s.client.Subjects(ctx)
		if err != nil {
			return s.cfg.IsKey, 0, err
		}
		return s.cfg.IsKey, len(list), nil
	}
	return false, 0, errors.New("no schema-registry converter")
}

// Inspect reports the subjects rec (a router record, not converted)
// would be written under, their latest versions, and whether rec's
// schemas are compatible with them. It registers nothing.
func (c *Converter) Inspect(ctx context.Context, rec *router.Record) ([]Subject, error) {
	var out []Subject
	for _, h := range []struct {
		s        *side
		envelope []byte
	}{{c.key, rec.Key}, {c.value, rec.Value}} {
		if h.s == nil || h.envelope == nil {
			continue
		}
		sub, err := h.s.inspect(ctx, rec, h.envelope)
		if err != nil {
			return out, err
		}
		if sub != nil {
			out = append(out, *sub)
		}
	}
	return out, nil
}

func (s *side) inspect(ctx context.Context, rec *router.Record, envelope []byte) (*Subject, error) {
	comp, _, err := s.prepare(rec, envelope)
	if comp == nil {
		return nil, err
	}
	sub := &Subject{Name: s.cfg.Strategy.Subject(rec.Topic, s.cfg.IsKey, comp.codec.Name()), IsKey: s.cfg.IsKey, Compatible: true}
	client := s.client
	latest, err := client.Latest(ctx, sub.Name)
	var e *Error
	switch {
	case errors.As(err, &e) && e.Status == http.StatusNotFound:
		return sub, nil // a new subject
	case err != nil:
		return nil, fmt.Errorf("subject %q: %w", sub.Name, err)
	}
	sub.Latest = latest
	sub.Compatible, sub.Messages, err = client.Compatible(ctx, sub.Name, s.format.SchemaType, comp.codec.Schema())
	if err != nil {
		return nil, fmt.Errorf("subject %q: %w", sub.Name, err)
	}
	return sub, nil
}
