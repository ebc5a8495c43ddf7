package sink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/createtopics"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// Ping sends an ApiVersions request to a bootstrap broker with the
// configured security settings. Unlike a metadata lookup, which kafka-go
// may answer from its cache, it always reaches a broker: readiness and
// `outboxrelay check` use it to ask "does Kafka answer now?".
func (p *Producer) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	res, err := p.client.ApiVersions(ctx, &kafka.ApiVersionsRequest{})
	if err != nil {
		return fmt.Errorf("sink: asking %v for its API versions: %w", p.cfg.Brokers, explain(err))
	}
	if res.Error != nil {
		return fmt.Errorf("sink: asking %v for its API versions: %w", p.cfg.Brokers, explain(res.Error))
	}
	return nil
}

// TopicPartitions returns the partition count of topic, or 0 when the topic
// does not exist. It never creates the topic.
func (p *Producer) TopicPartitions(ctx context.Context, topic string) (int, error) {
	n, err := p.partitionCount(ctx, topic, false)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sink: %w", err)
	}
	return n, nil
}

// ValidateTopicCreation asks the controller whether the topic could be
// created as the producer would create it (CreateTopics with validate_only:
// nothing is created). ErrTopicMissing when the config creates no topics
// and the broker may not auto-create it. It sends the request on a
// connection of its own: kafka-go's Transport, after any CreateTopics
// answer without an error, waits for the topic to appear in the metadata,
// which after validate_only it never does (check spent request.timeout.ms,
// 30 s, on every topic that did not exist yet).
func (p *Producer) ValidateTopicCreation(ctx context.Context, topic string) error {
	parts, rf, ok := p.creationSpec(topic)
	if !ok {
		if p.cfg.AllowAutoCreateTopics {
			return nil // the broker's auto.create.topics.enable decides; see BrokerConfig
		}
		return fmt.Errorf("%w: %q; create it, or set %s and %s (-1 = broker default) to have outboxrelay create missing topics",
			ErrTopicMissing, topic, KeyTopicPartitions, KeyTopicReplication)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	code, msg, err := p.validateCreation(ctx, topic, parts, rf)
	if err != nil {
		return fmt.Errorf("sink: validating the creation of topic %q: %w", topic, explain(err))
	}
	if kerr := kafka.Error(code); code != 0 && !errors.Is(kerr, kafka.TopicAlreadyExists) {
		var err error = kerr
		if msg != "" {
			err = fmt.Errorf("%w: %s", kerr, msg)
		}
		return fmt.Errorf("sink: topic %q could not be created with %d partitions, replication factor %d: %w (check %s and %s)",
			topic, parts, rf, explain(err), KeyTopicPartitions, KeyTopicReplication)
	}
	return nil
}

// validateCreation sends CreateTopics with validate_only to the controller
// and returns the topic's error code and the broker's message.
func (p *Producer) validateCreation(ctx context.Context, topic string, parts, rf int) (int16, string, error) {
	r, err := p.transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{})
	if err != nil {
		return 0, "", fmt.Errorf("fetching the controller (metadata): %w", err)
	}
	meta := r.(*metadataAPI.Response)
	addr := ""
	for _, b := range meta.Brokers {
		if b.NodeID == meta.ControllerID {
			addr = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
	if addr == "" {
		return 0, "", fmt.Errorf("the metadata names no controller (controller id %d)", meta.ControllerID)
	}
	m, err := p.roundTripOnce(ctx, addr, &createtopics.Request{ValidateOnly: true, TimeoutMs: int32(p.cfg.RequestTimeout.Milliseconds()),
		Topics: []createtopics.RequestTopic{{Name: topic, NumPartitions: int32(parts), ReplicationFactor: int16(rf)}}})
	if err != nil {
		return 0, "", fmt.Errorf("CreateTopics (validate only) to %s: %w", addr, err)
	}
	res, ok := m.(*createtopics.Response)
	if !ok {
		return 0, "", fmt.Errorf("broker %s answered CreateTopics with %T", addr, m)
	}
	for _, t := range res.Topics {
		if t.Name == topic {
			return t.ErrorCode, t.ErrorMessage, nil
		}
	}
	return 0, "", fmt.Errorf("broker %s answered CreateTopics without topic %q", addr, topic)
}

// TopicConfig returns a topic's effective value of a config (for example
// max.message.bytes), broker defaults included.
func (p *Producer) TopicConfig(ctx context.Context, topic, name string) (string, error) {
	return p.describeConfig(ctx, kafka.ResourceTypeTopic, topic, name)
}

// BrokerConfig returns a config of one of the brokers (for example
// message.max.bytes or auto.create.topics.enable).
func (p *Producer) BrokerConfig(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	md, err := p.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return "", fmt.Errorf("sink: reading the broker list: %w", explain(err))
	}
	if len(md.Brokers) == 0 {
		return "", errors.New("sink: the cluster lists no brokers")
	}
	return p.describeConfig(ctx, kafka.ResourceTypeBroker, strconv.Itoa(md.Brokers[0].ID), name)
}

func (p *Producer) describeConfig(ctx context.Context, typ kafka.ResourceType, resource, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	res, err := p.client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: typ, ResourceName: resource, ConfigNames: []string{name},
	}}})
	if err != nil {
		return "", fmt.Errorf("sink: describing %s of %q: %w", name, resource, explain(err))
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return "", fmt.Errorf("sink: describing %s of %q: %w", name, resource, explain(r.Error))
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				return e.ConfigValue, nil
			}
		}
	}
	return "", fmt.Errorf("sink: %q has no config %s", resource, name)
}
