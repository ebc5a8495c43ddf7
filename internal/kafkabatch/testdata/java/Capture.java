// Capture writes record batches with Kafka's own Java producer (kafka-clients)
// to a running broker, and lists what it sent in sent.tsv, so that the Go
// encoder and decoder of package kafkabatch can be tested against the bytes
// the Java client produces. See README.md; capture.sh runs it.
//
// Usage: java -cp 'libs/*:.' Capture BOOTSTRAP OUTDIR
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Capture {
    // CreateTimes are T0 + fixed offsets. T0 is the start of the current
    // minute, not a constant: records older than retention.ms (7 days) may be
    // deleted by the broker while the capture runs.
    static final long T0 = System.currentTimeMillis() / 60000 * 60000;
    static final String[] TOPICS = {"capture-txn", "capture-idem", "capture-plain", "capture-gzip", "capture-lz4", "capture-zstd", "capture-snappy"};

    static PrintWriter sent;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        sent = new PrintWriter(args[1] + "/sent.tsv", StandardCharsets.UTF_8);
        sent.println("# topic\tpartition\tcreate_time_ms\tkey_hex\tvalue_hex\theaders (key_hex=value_hex;...)  - is null");
        recreateTopics(bootstrap);

        // Transactional: a committed transaction of six records (null key,
        // tombstone, empty value, headers with a null value, a CreateTime
        // going backwards), an aborted one of two (flushed first, so they
        // reach the log), and a committed one of one.
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, Map.of("transactional.id", "kafkabatch-capture"))) {
            p.initTransactions();
            p.beginTransaction();
            send(p, "capture-txn", T0, "order-1", "{\"id\":1}", hdr("id", "e-1"), hdr("type", "OrderCreated"));
            send(p, "capture-txn", T0 + 5, null, "no key", hdr("nullvalue", null));
            send(p, "capture-txn", T0 + 3, "order-1", null);
            send(p, "capture-txn", T0 + 300, "order-2", "");
            send(p, "capture-txn", T0 + 301, "", "x".repeat(200));
            send(p, "capture-txn", T0 + 70000, "order-3", "late");
            p.commitTransaction();

            p.beginTransaction();
            send(p, "capture-txn", T0 + 1000, "order-4", "aborted 1");
            send(p, "capture-txn", T0 + 1001, "order-5", "aborted 2", hdr("h", "v"));
            p.flush();
            p.abortTransaction();

            p.beginTransaction();
            send(p, "capture-txn", T0 + 2000, "order-6", "after the abort");
            p.commitTransaction();
        }

        // Idempotent, not transactional: two batches, sequences 0.. and 3..
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, Map.of())) {
            for (int i = 0; i < 3; i++) send(p, "capture-idem", T0 + i, "k" + i, "idempotent " + i);
            p.flush();
            for (int i = 3; i < 5; i++) send(p, "capture-idem", T0 + i, "k" + i, "idempotent " + i, hdr("n", "" + i));
            p.flush();
        }

        // Neither: producer id, epoch and sequence are -1.
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, Map.of("enable.idempotence", "false", "acks", "1"))) {
            send(p, "capture-plain", T0, "a", "plain 1");
            send(p, "capture-plain", T0 + 1, "b", "plain 2", hdr("h", ""));
            p.flush();
        }

        // One idempotent batch per compression codec, compressible values.
        for (String codec : new String[] {"gzip", "lz4", "zstd", "snappy"}) {
            try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, Map.of("compression.type", codec))) {
                for (int i = 0; i < 4; i++) send(p, "capture-" + codec, T0 + i, "key-" + i, (codec + " value " + i + " ").repeat(20), hdr("codec", codec));
                p.flush();
            }
        }
        sent.close();
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, String> extra) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("linger.ms", "600000"); // a batch closes on flush or commit only
        props.put("batch.size", "1048576");
        props.put("compression.type", "none");
        props.putAll(extra);
        return new KafkaProducer<>(props);
    }

    static Header hdr(String k, String v) {
        return new RecordHeader(k, v == null ? null : v.getBytes(StandardCharsets.UTF_8));
    }

    static void send(KafkaProducer<byte[], byte[]> p, String topic, long ts, String key, String value, Header... headers) {
        byte[] k = key == null ? null : key.getBytes(StandardCharsets.UTF_8);
        byte[] v = value == null ? null : value.getBytes(StandardCharsets.UTF_8);
        p.send(new ProducerRecord<>(topic, 0, ts, k, v, List.of(headers)));
        List<String> hs = new ArrayList<>();
        for (Header h : headers) hs.add(hex(h.key().getBytes(StandardCharsets.UTF_8)) + "=" + hex(h.value()));
        sent.println(topic + "\t0\t" + ts + "\t" + hex(k) + "\t" + hex(v) + "\t" + String.join(";", hs));
    }

    static String hex(byte[] b) { return b == null ? "-" : HexFormat.of().formatHex(b); }

    static void recreateTopics(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            for (String t : TOPICS) {
                try {
                    admin.deleteTopics(List.of(t)).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) throw e;
                }
            }
            List<NewTopic> topics = new ArrayList<>();
            for (String t : TOPICS) topics.add(new NewTopic(t, 1, (short) 1));
            for (int attempt = 0; ; attempt++) {
                try {
                    admin.createTopics(topics).all().get();
                    return;
                } catch (ExecutionException e) {
                    if (attempt > 20) throw e; // a deleted topic takes a moment to go
                    Thread.sleep(500);
                }
            }
        }
    }
}
