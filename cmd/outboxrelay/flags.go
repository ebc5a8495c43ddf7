package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/setup"
)

// commandFlags are the flags every command that reads a connector file
// shares (run, check, verify): --config, --kafka-brokers, --shadow and
// --shadow-prefix. A command adds its own to fl before parse.
type commandFlags struct {
	name         string
	fl           *flag.FlagSet
	config       *string
	brokers      *string
	shadow       *bool
	shadowPrefix *string
	// red redacts the secrets of the loaded file from every logger and
	// human output of the command (load sets them).
	red *config.Redactor
}

// newCommandFlags is the flag set of the command name, its errors and
// usage written to stderr.
func newCommandFlags(name string, stderr io.Writer) *commandFlags {
	configDoc, brokersDoc := "connector JSON file, as for run", "Kafka bootstrap servers, as for run"
	if name == "run" {
		configDoc = "connector JSON file (Kafka Connect's {\"name\",\"config\"} or the bare config map)"
		brokersDoc = "Kafka bootstrap servers, host:port[,host:port]; else bootstrap.servers in the file, else $KAFKA_BOOTSTRAP_SERVERS"
	}
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	return &commandFlags{
		name:         name,
		fl:           fl,
		config:       fl.String("config", "", configDoc),
		brokers:      fl.String("kafka-brokers", "", brokersDoc),
		shadow:       fl.Bool("shadow", false, "a shadow run beside the live Debezium connector of the same file: slot <slot.name>_shadow, offsets topic "+setup.ShadowOffsetsTopic+", every topic under --shadow-prefix, no writes to the database"),
		shadowPrefix: fl.String("shadow-prefix", "shadow.", "with --shadow: the prefix of every topic the shadow run writes"),
		red:          config.NewRedactor(),
	}
}

// parse parses args and requires --config; its errors are usage errors
// (for -h and --help, flag.ErrHelp: main exits 0).
func (c *commandFlags) parse(args []string) error {
	if err := c.fl.Parse(args); err != nil {
		return usageError{err}
	}
	if *c.config == "" {
		return usageError{fmt.Errorf("%s: --config is required, e.g. outboxrelay %s --config connector.json", c.name, c.name)}
	}
	return nil
}

// prefix is the shadow topic prefix, or "" without --shadow.
func (c *commandFlags) prefix() string {
	if !*c.shadow {
		return ""
	}
	return *c.shadowPrefix
}

// load reads the connector file with --kafka-brokers (loadConfig) and
// gives its secrets to the command's redactor.
func (c *commandFlags) load(ctx context.Context, log *slog.Logger) (*config.Config, error) {
	return loadConfig(ctx, *c.config, *c.brokers, log, c.red)
}

// warnLog is check's and verify's logger: config warnings to stderr as
// text, the command's own report going to stdout.
func (c *commandFlags) warnLog(stderr io.Writer) *slog.Logger {
	return slog.New(c.red.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// human is the command's report writer on w (humanWriter).
func (c *commandFlags) human(w io.Writer) io.Writer {
	return humanWriter{w: w, red: c.red}
}
