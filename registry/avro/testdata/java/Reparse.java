// Reparse: Apache Avro's Java library (org.apache.avro:avro 1.12.2) parses
// each schema text given (testdata/*.avsc) and writes it again with
// Schema.toString(); a text that is not written back byte for byte is
// reported. It checks the order of attributes, the namespaces and the name
// references of our schema text against Avro's own writer. Not run by the
// Go tests (no Java on CI's path for them); run by hand:
//
//   mvn dependency:build-classpath -Dmdep.outputFile=cp.txt  (a pom with org.apache.avro:avro:1.12.2)
//   java -cp "$(cat cp.txt)" testdata/java/Reparse.java testdata/*.avsc
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.avro.Schema;

public class Reparse {
  public static void main(String[] args) throws Exception {
    int bad = 0;
    for (String file : args) {
      String text = Files.readString(Path.of(file)).strip();
      String again;
      try {
        again = new Schema.Parser().parse(text).toString();
      } catch (Exception e) {
        System.out.println("REFUSED " + file + ": " + e);
        bad++;
        continue;
      }
      if (!again.equals(text)) {
        System.out.println("DIFFERS " + file + "\n ours: " + text + "\n avro: " + again);
        bad++;
      }
    }
    System.out.println(args.length + " schemas, " + bad + " not written back the same");
    System.exit(bad == 0 ? 0 : 1);
  }
}
