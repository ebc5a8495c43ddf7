#!/usr/bin/env bash
# capture.sh: regenerate the captured Java batches in this directory.
# Needs the test bed running (scripts/devenv up, same OUTBOXRELAY_DEVENV_DIR):
# it compiles Capture.java against the bed's Kafka jars, runs it against the
# bed's broker, copies each topic's log segment here (as TOPIC-0.log) and dumps it with
# Kafka's own DumpLogSegments (the oracle the Go tests compare with).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${OUTBOXRELAY_DEVENV_DIR:-/tmp/outboxrelay-devenv}
LIBS=${OUTBOXRELAY_CACHE:-$HOME/.cache/outboxrelay}/kafka-4.1.1/libs
BROKERS=${OUTBOXRELAY_TEST_KAFKA_BROKERS:?run eval "\$(scripts/devenv up)" first}
BUILD=$(mktemp -d); trap 'rm -rf "$BUILD"' EXIT

javac -d "$BUILD" -cp "$LIBS/*" "$HERE/Capture.java"
java -cp "$LIBS/*:$BUILD" -Dlog4j2.level=warn Capture "$BROKERS" "$HERE" 2> "$BUILD/capture.log" || { cat "$BUILD/capture.log" >&2; exit 1; }
sleep 1
: > "$HERE/dumplog.txt"; : > "$HERE/aborted.txt"; : > "$HERE/readcommitted.txt"
for dir in "$STATE"/kafka/data/capture-*-0; do
	topic=$(basename "$dir")
	# The broker may have rolled the log: its segments, in offset order (the
	# zero-padded names sort), make one file of consecutive batches.
	cat "$dir"/*.log > "$HERE/$topic.log"
	echo "== $topic" >> "$HERE/dumplog.txt"
	java -cp "$LIBS/*" kafka.tools.DumpLogSegments --deep-iteration --print-data-log \
		--files "$(ls "$dir"/*.log | paste -sd, -)" | grep -v -e '^Dumping ' -e '^Log starting offset' >> "$HERE/dumplog.txt"
	# The broker's index of aborted transactions (what a read_committed
	# fetch lists), and the offsets Kafka's console consumer delivers
	# reading read_committed: the oracles of TestCommittedMatchesJava.
	echo "== $topic" >> "$HERE/aborted.txt"
	java -cp "$LIBS/*" kafka.tools.DumpLogSegments --files "$(ls "$dir"/*.txnindex | paste -sd, -)" \
		| grep '^version' >> "$HERE/aborted.txt" || true
	echo "== $topic" >> "$HERE/readcommitted.txt"
	java -cp "$LIBS/*" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BROKERS" \
		--topic "${topic%-0}" --partition 0 --offset earliest --isolation-level read_committed \
		--timeout-ms 5000 --property print.offset=true --property print.value=false \
		| grep '^Offset:' >> "$HERE/readcommitted.txt" || true
done
ls -l "$HERE"/*.log
