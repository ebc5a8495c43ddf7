package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxrelay/outboxrelay/registry"
	"github.com/outboxrelay/outboxrelay/router"
)

// keepSample keeps a copy of the first record routed to each topic (the
// router's bytes are reused by the next Route), for the registry checks.
func (c *checker) keepSample(r *router.Record) {
	if _, ok := c.samples[r.Topic]; ok {
		return
	}
	cp := *r
	cp.Key, cp.Value, cp.Headers = bytes.Clone(r.Key), bytes.Clone(r.Value), nil
	c.samples[r.Topic] = cp
}

// registryChecks: the schema registry answers with the configured
// credentials; for each topic of recent rows, the subjects its records
// would be written under, their latest version and whether the next
// schema is compatible (the registry's own verdict). It registers
// nothing. cfg says the strategies; conv is nil without a registry
// converter.
func (c *checker) registryChecks(ctx context.Context, cfg registry.Config, conv *registry.Converter) {
	if conv == nil {
		return
	}
	isKey, n, err := conv.Ping(ctx)
	side := cfg.Value
	if isKey {
		side = cfg.Key
	}
	if err != nil {
		c.fail("schema registry", err.Error(), registryFix(side, err))
		return
	}
	c.pass("schema registry", fmt.Sprintf("%s answers (%d subjects)", strings.Join(side.URLs, ", "), n))
	if len(c.samples) == 0 {
		c.pass("schema registry subjects", "no recent outbox rows to learn topics from; "+subjectRule(cfg))
		return
	}
	topics := make([]string, 0, len(c.samples))
	for t := range c.samples {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for i, t := range topics {
		if i == 20 {
			c.pass("schema registry subjects", fmt.Sprintf("%d more topics not checked", len(topics)-i))
			break
		}
		rec := c.samples[t]
		subs, err := conv.Inspect(ctx, &rec)
		if err != nil {
			c.fail("schema registry subjects of topic "+t, err.Error(), registryFix(side, err))
			continue
		}
		for _, s := range subs {
			c.subject(s)
		}
	}
}

// subject is one subject's line.
func (c *checker) subject(s registry.Subject) {
	name := "schema subject " + s.Name
	switch {
	case s.Latest.Version == 0:
		c.pass(name, "new: the first record registers its schema (version 1)")
	case s.Compatible:
		c.pass(name, fmt.Sprintf("latest version %d (id %d); the next schema is compatible", s.Latest.Version, s.Latest.ID))
	default:
		c.fail(name, fmt.Sprintf("latest version %d (id %d); the next schema is not compatible: %s", s.Latest.Version, s.Latest.ID, strings.Join(s.Messages, "; ")),
			"the registry will refuse it (HTTP 409) and each such record is a poison row: change the subject's compatibility level, or make the payload compatible")
	}
}

// subjectRule says which subjects records are written under.
func subjectRule(cfg registry.Config) string {
	var parts []string
	for _, s := range []registry.Side{cfg.Key, cfg.Value} {
		if s.Class == "" {
			continue
		}
		half := "value"
		if s.IsKey {
			half = "key"
		}
		switch s.Strategy {
		case registry.TopicName:
			parts = append(parts, fmt.Sprintf("%ss under <topic>-%s (TopicNameStrategy)", half, half))
		default:
			parts = append(parts, fmt.Sprintf("%ss under a subject per record schema (%s)", half, s.Strategy))
		}
	}
	return strings.Join(parts, "; ")
}

func registryFix(s registry.Side, err error) string {
	var e *registry.Error
	p := s.Prefix()
	if errors.As(err, &e) && e.Unauthorized() {
		return "check " + p + "basic.auth.credentials.source / " + p + "basic.auth.user.info (or " + p + "bearer.auth.token) and the principal's permissions"
	}
	return "check " + p + "schema.registry.url, " + p + "schema.registry.ssl.* and that the registry runs"
}
