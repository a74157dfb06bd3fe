/*
 * IcebergHarness - stock Java Iceberg as an oracle for HyperStreamDB tables.
 *
 * Commands (paths are local paths or file: URIs; read also takes s3:// and
 * s3a:// URIs):
 *
 *   read <metadata.json> [--snapshot ID] [--columns a,b,...] [--out FILE]
 *       Loads the table from that one metadata file (StaticTableOperations
 *       over HadoopFileIO, like pyiceberg's StaticTable; over iceberg-aws's
 *       S3FileIO for s3:// and s3a:// URIs, configured from the environment:
 *       AWS_ENDPOINT_URL (then path-style addressing), AWS_ACCESS_KEY_ID,
 *       AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION), reads every row of
 *       the snapshot (default: current) with IcebergGenerics, which applies
 *       position deletes, equality deletes and deletion vectors, and prints
 *       the rows as JSON Lines following docs/jsonl.md.  --columns may name
 *       the metadata columns _row_id and _last_updated_sequence_number
 *       (v3 row lineage), _file and _pos.
 *
 *   create <table dir> <schema.json> [--partition SPEC] [--format-version N]
 *       Creates a table with HadoopTables (metadata/v1.metadata.json and
 *       version-hint.text).  schema.json holds an Iceberg schema object;
 *       SPEC is "identity(c), bucket(16, c), truncate(4, c), year(c),
 *       month(c), day(c), hour(c), void(c)" (a bare "c" is identity).
 *
 *   append <table dir> <rows.jsonl>
 *       Writes the rows (JSON Lines read by the table schema, docs/jsonl.md's
 *       accepted forms) as Parquet data files, one per partition, and
 *       commits one fast append.
 *
 *   delete <table dir> <column> <json value>
 *       Deletes the rows whose column equals the value by merge-on-read:
 *       one position-delete file per affected data file (format v2), or
 *       deletion vectors in a Puffin file (format v3; a data file that
 *       already has a DV gets one new DV holding the old positions too, and
 *       the old DV is removed in the same commit); one row-delta commit.
 *
 *   eqdelete <table dir> <columns a,b,...> <rows.jsonl> [--full-rows]
 *       Writes equality delete files (what Flink and Spark's merge-on-read
 *       upserts write) with equality_ids = the named columns' field ids:
 *       the rows (JSON Lines read by the table schema) are grouped by the
 *       partition the current spec gives them (so partitioned tables need
 *       the partition source columns in each row), one Parquet delete file
 *       per partition holding only the equality columns (--full-rows: the
 *       whole rows, as the spec allows), committed as one RowDelta.
 *
 *   current-metadata <table dir>
 *       Prints the current metadata file location.
 *
 *   rewrite <table dir>
 *       What Spark's rewrite_data_files does, with core Java Iceberg only:
 *       reads every live row of the current snapshot (deletes applied),
 *       writes them as new Parquet files (one per partition of each spec)
 *       and commits one RewriteFiles "replace" that removes every data
 *       file and every delete file of the snapshot (validated from that
 *       snapshot; the new files keep its data sequence number).  Format v2
 *       only (a v3 rewrite would have to carry _row_id).
 *
 *   expire <table dir> [--retain-last N]
 *       ExpireSnapshots older than now, keeping the last N (default 1), with
 *       Java deleting the data, delete, manifest and metadata files that no
 *       remaining snapshot references (it knows nothing of index sidecars).
 *
 *   serve
 *       Reads such commands from stdin, one a line, arguments separated by
 *       tabs, and after each prints "##done 0", or "##done 1 <message>"
 *       when it failed: one JVM for a whole test session.
 *
 *   batch <file>
 *       Runs the commands in the file, one a line, arguments separated by
 *       tabs, in one JVM (start-up costs seconds); `read ... --out FILE`
 *       sends each read's rows to its own file.
 *
 * Output encoding of values (docs/jsonl.md):
 *
 *   Iceberg type        Java object (generics)   JSON
 *   ----------------    ----------------------   -----------------------------------
 *   boolean             Boolean                  true / false
 *   int, long           Integer, Long            number
 *   float, double       Float, Double            number; "NaN", "Infinity",
 *                                                "-Infinity"; -0.0
 *   decimal(P,S)        BigDecimal               string with the scale applied
 *   date                LocalDate                "YYYY-MM-DD"
 *   time                LocalTime                "HH:MM:SS.ffffff"
 *   timestamp           LocalDateTime            "YYYY-MM-DDTHH:MM:SS.ffffff"
 *   timestamptz         OffsetDateTime           the same in UTC with "Z"
 *   timestamp_ns(tz)    LocalDateTime/Offset..   9 fraction digits
 *   string              CharSequence             JSON string, only " \ and
 *                                                controls escaped
 *   uuid                UUID                     "8-4-4-4-12" lowercase
 *   fixed, binary       byte[], ByteBuffer       base64 with padding
 *   struct              Record                   object in field order
 *   list                List                     array
 *   map                 Map                      [{"key":k,"value":v},...]
 *
 * Exit status: 0 on success, 2 on bad usage, 1 on any failure (message on
 * stderr).
 */
package hs.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.DVFileWriter;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.encryption.EncryptedFiles;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ContentFileUtil;

public final class IcebergHarness {
  private static final ObjectMapper JSON = new ObjectMapper();

  private IcebergHarness() {}

  public static void main(String[] args) {
    try {
      if (args.length == 0) {
        usage();
      }
      if (args[0].equals("serve")) {
        serve();
        return;
      }
      if (args[0].equals("batch")) {
        // One JVM for many commands (JVM start-up dominates small reads).
        for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
          if (!line.isBlank()) {
            run(line.split("\t"));
          }
        }
      } else {
        run(args);
      }
    } catch (UsageError e) {
      System.err.println(USAGE);
      System.exit(2);
    } catch (Exception | LinkageError e) {
      System.err.println("iceberg-harness: " + e);
      Throwable c = e.getCause();
      while (c != null) {
        System.err.println("  caused by: " + c);
        c = c.getCause();
      }
      if (System.getenv("HS_HARNESS_TRACE") != null) {
        e.printStackTrace();
      }
      System.exit(1);
    }
  }

  /**
   * Reads commands from stdin, one a line, arguments separated by tabs; after
   * each prints what the command printed, then "##done 0" or "##done 1
   * message" (a failure of one command does not end the loop).
   */
  private static void serve() throws IOException {
    BufferedReader in =
        new BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) {
        continue;
      }
      String status = "0";
      try {
        run(line.split("\t"));
      } catch (Exception | LinkageError | AssertionError e) {
        StringBuilder msg = new StringBuilder(e.toString());
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
          msg.append(" / caused by: ").append(c);
        }
        status = "1 " + msg.toString().replace('\n', ' ');
      }
      System.out.println("##done " + status);
      System.out.flush();
    }
  }

  private static void run(String[] args) throws IOException {
    if (args.length < 2) {
      usage();
    }
    switch (args[0]) {
      case "read":
        read(args);
        break;
      case "create":
        create(args);
        break;
      case "append":
        append(args);
        break;
      case "delete":
        delete(args);
        break;
      case "eqdelete":
        eqDelete(args);
        break;
      case "current-metadata":
        System.out.println(currentMetadata(loadTable(args[1])));
        break;
      case "rewrite":
        rewrite(args);
        break;
      case "expire":
        expire(args);
        break;
      default:
        usage();
    }
  }

  private static final String USAGE =
      "usage: iceberg-harness read <metadata.json> [--snapshot ID] [--columns a,b]"
        + " [--out FILE]\n"
        + "       iceberg-harness create <table dir> <schema.json> [--partition SPEC]"
        + " [--format-version N]\n"
        + "       iceberg-harness append <table dir> <rows.jsonl>\n"
        + "       iceberg-harness delete <table dir> <column> <json value>\n"
        + "       iceberg-harness eqdelete <table dir> <columns a,b> <rows.jsonl>"
        + " [--full-rows]\n"
        + "       iceberg-harness current-metadata <table dir>\n"
        + "       iceberg-harness rewrite <table dir>\n"
        + "       iceberg-harness expire <table dir> [--retain-last N]\n"
        + "       (a table dir may be rest:<uri>|<token>|ns.table: Java's RESTCatalog)\n"
        + "       iceberg-harness batch <file of commands, one a line, arguments"
        + " separated by tabs>\n"
        + "       iceberg-harness serve   (the same commands on stdin, each answered"
        + " by a line \"##done 0\" or \"##done 1 <message>\")";

  /** Bad usage: main prints the text and exits 2; serve answers "##done 1". */
  private static final class UsageError extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    UsageError() {
      super(USAGE);
    }
  }

  private static void usage() {
    throw new UsageError();
  }

  private static String option(String[] args, String name) {
    for (int i = 2; i + 1 < args.length; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return null;
  }

  private static Configuration hadoopConf() {
    Configuration conf = new Configuration(false);
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  // ------------------------------------------------------------------
  // read

  /** S3FileIO properties from the AWS_* environment (see read above). */
  private static Map<String, String> s3Properties() {
    Map<String, String> p = new HashMap<>();
    String ep = System.getenv("AWS_ENDPOINT_URL");
    if (ep != null && !ep.isEmpty()) {
      p.put("s3.endpoint", ep);
      p.put("s3.path-style-access", "true");
    }
    String[][] env = {
      {"AWS_ACCESS_KEY_ID", "s3.access-key-id"},
      {"AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"},
      {"AWS_SESSION_TOKEN", "s3.session-token"},
    };
    for (String[] e : env) {
      String v = System.getenv(e[0]);
      if (v != null && !v.isEmpty()) {
        p.put(e[1], v);
      }
    }
    String region = System.getenv("AWS_REGION");
    p.put("client.region", region != null && !region.isEmpty() ? region : "us-east-1");
    // the SDK's URLConnection client: the Apache one is not on the class path
    p.put("http-client.type", "urlconnection");
    return p;
  }

  private static org.apache.iceberg.io.FileIO fileIOFor(String location) {
    if (location.startsWith("s3://") || location.startsWith("s3a://")) {
      org.apache.iceberg.aws.s3.S3FileIO io = new org.apache.iceberg.aws.s3.S3FileIO();
      io.initialize(s3Properties());
      return io;
    }
    return new HadoopFileIO(hadoopConf());
  }

  private static void read(String[] args) throws IOException {
    String metadata = args[1];
    org.apache.iceberg.io.FileIO io = fileIOFor(metadata);
    Table table = new BaseTable(new StaticTableOperations(metadata, io), metadata);
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table);
    String snap = option(args, "--snapshot");
    Schema schema = table.schema();
    if (snap != null) {
      long id = Long.parseLong(snap);
      scan = scan.useSnapshot(id);
      Integer schemaId = table.snapshot(id).schemaId();
      if (schemaId != null && table.schemas().get(schemaId) != null) {
        schema = table.schemas().get(schemaId);
      }
    }
    String cols = option(args, "--columns");
    if (cols != null) {
      List<Types.NestedField> fields = new ArrayList<>();
      for (String name : cols.split(",")) {
        Types.NestedField f = columnField(schema, name.trim());
        fields.add(f);
      }
      schema = new Schema(fields);
      scan = scan.project(schema);
    } else {
      scan = scan.project(schema);
    }
    String outPath = option(args, "--out");
    OutputStream sink =
        outPath != null ? Files.newOutputStream(Paths.get(outPath)) : new FileOut();
    PrintStream out =
        new PrintStream(new BufferedOutputStream(sink, 1 << 16), false, StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(256);
    try (CloseableIterable<Record> rows = scan.build()) {
      for (Record r : rows) {
        sb.setLength(0);
        writeStruct(sb, schema.asStruct(), r);
        sb.append('\n');
        out.print(sb);
      }
    }
    out.flush();
    if (out.checkError()) {
      throw new IOException("writing " + (outPath != null ? outPath : "stdout") + " failed");
    }
    if (outPath != null) {
      out.close();
    }
  }

  /** stdout without System.out's line flushing. */
  private static final class FileOut extends OutputStream {
    private final java.io.FileOutputStream fd = new java.io.FileOutputStream(java.io.FileDescriptor.out);

    @Override
    public void write(int b) throws IOException {
      fd.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      fd.write(b, off, len);
    }
  }

  private static Types.NestedField columnField(Schema schema, String name) {
    switch (name) {
      case "_row_id":
        return MetadataColumns.ROW_ID;
      case "_last_updated_sequence_number":
        return MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER;
      case "_file":
        return MetadataColumns.FILE_PATH;
      case "_pos":
        return MetadataColumns.ROW_POSITION;
      default:
        Types.NestedField f = schema.findField(name);
        if (f == null || schema.asStruct().field(f.fieldId()) == null) {
          throw new IllegalArgumentException("no top-level column " + name + " in " + schema);
        }
        return f;
    }
  }

  // ------------------------------------------------------------------
  // JSON output (docs/jsonl.md)

  private static void writeStruct(StringBuilder sb, Types.StructType type, StructLike rec) {
    sb.append('{');
    List<Types.NestedField> fields = type.fields();
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField f = fields.get(i);
      if (i > 0) {
        sb.append(',');
      }
      writeString(sb, f.name());
      sb.append(':');
      Object v = rec instanceof Record ? ((Record) rec).get(i) : rec.get(i, Object.class);
      writeValue(sb, f.type(), v);
    }
    sb.append('}');
  }

  private static void writeValue(StringBuilder sb, Type type, Object v) {
    if (v == null) {
      sb.append("null");
      return;
    }
    switch (type.typeId()) {
      case BOOLEAN:
      case INTEGER:
      case LONG:
        sb.append(v);
        return;
      case FLOAT:
        writeFloat(sb, ((Number) v).floatValue());
        return;
      case DOUBLE:
        writeDouble(sb, ((Number) v).doubleValue());
        return;
      case DECIMAL:
        writeString(sb, ((BigDecimal) v).toPlainString());
        return;
      case DATE:
        sb.append('"');
        appendDate(sb, (LocalDate) v);
        sb.append('"');
        return;
      case TIME:
        sb.append('"');
        appendTime(sb, (LocalTime) v, 6);
        sb.append('"');
        return;
      case TIMESTAMP:
        writeTimestamp(sb, v, 6, ((Types.TimestampType) type).shouldAdjustToUTC());
        return;
      case TIMESTAMP_NANO:
        writeTimestamp(sb, v, 9, ((Types.TimestampNanoType) type).shouldAdjustToUTC());
        return;
      case STRING:
        writeString(sb, v.toString());
        return;
      case UUID:
        writeString(sb, v.toString());
        return;
      case FIXED:
      case BINARY:
        writeBase64(sb, v);
        return;
      case STRUCT:
        writeStruct(sb, type.asStructType(), (StructLike) v);
        return;
      case LIST: {
        Type elem = type.asListType().elementType();
        sb.append('[');
        boolean first = true;
        for (Object e : (List<?>) v) {
          if (!first) {
            sb.append(',');
          }
          first = false;
          writeValue(sb, elem, e);
        }
        sb.append(']');
        return;
      }
      case MAP: {
        Types.MapType mt = type.asMapType();
        sb.append('[');
        boolean first = true;
        for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
          if (!first) {
            sb.append(',');
          }
          first = false;
          sb.append("{\"key\":");
          writeValue(sb, mt.keyType(), e.getKey());
          sb.append(",\"value\":");
          writeValue(sb, mt.valueType(), e.getValue());
          sb.append('}');
        }
        sb.append(']');
        return;
      }
      default:
        writeString(sb, v.toString());
    }
  }

  private static void writeFloat(StringBuilder sb, float f) {
    if (Float.isNaN(f)) {
      sb.append("\"NaN\"");
    } else if (Float.isInfinite(f)) {
      sb.append(f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else {
      sb.append(Float.toString(f)); // "-0.0", "1.0E10": valid JSON numbers
    }
  }

  private static void writeDouble(StringBuilder sb, double d) {
    if (Double.isNaN(d)) {
      sb.append("\"NaN\"");
    } else if (Double.isInfinite(d)) {
      sb.append(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else {
      sb.append(Double.toString(d));
    }
  }

  private static void pad(StringBuilder sb, long v, int width) {
    String s = Long.toString(v);
    for (int i = s.length(); i < width; i++) {
      sb.append('0');
    }
    sb.append(s);
  }

  private static void appendDate(StringBuilder sb, LocalDate d) {
    int y = d.getYear();
    if (y < 0) {
      sb.append('-');
      pad(sb, -(long) y, 4);
    } else {
      pad(sb, y, 4);
    }
    sb.append('-');
    pad(sb, d.getMonthValue(), 2);
    sb.append('-');
    pad(sb, d.getDayOfMonth(), 2);
  }

  private static void appendTime(StringBuilder sb, LocalTime t, int digits) {
    pad(sb, t.getHour(), 2);
    sb.append(':');
    pad(sb, t.getMinute(), 2);
    sb.append(':');
    pad(sb, t.getSecond(), 2);
    sb.append('.');
    int nanos = t.getNano();
    pad(sb, digits == 9 ? nanos : nanos / 1000, digits);
  }

  private static void writeTimestamp(StringBuilder sb, Object v, int digits, boolean utc) {
    LocalDateTime ldt;
    if (v instanceof OffsetDateTime) {
      ldt = ((OffsetDateTime) v).withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime();
    } else {
      ldt = (LocalDateTime) v;
    }
    sb.append('"');
    appendDate(sb, ldt.toLocalDate());
    sb.append('T');
    appendTime(sb, ldt.toLocalTime(), digits);
    if (utc) {
      sb.append('Z');
    }
    sb.append('"');
  }

  private static void writeBase64(StringBuilder sb, Object v) {
    byte[] bytes;
    if (v instanceof ByteBuffer) {
      ByteBuffer b = ((ByteBuffer) v).duplicate();
      bytes = new byte[b.remaining()];
      b.get(bytes);
    } else {
      bytes = (byte[]) v;
    }
    sb.append('"').append(Base64.getEncoder().encodeToString(bytes)).append('"');
  }

  private static void writeString(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          sb.append("\\\"");
          break;
        case '\\':
          sb.append("\\\\");
          break;
        case '\n':
          sb.append("\\n");
          break;
        case '\r':
          sb.append("\\r");
          break;
        case '\t':
          sb.append("\\t");
          break;
        case '\b':
          sb.append("\\b");
          break;
        case '\f':
          sb.append("\\f");
          break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  // ------------------------------------------------------------------
  // create / append / delete (HadoopTables: metadata/vN.metadata.json + version-hint.text)

  private static Table loadTable(String dir) {
    if (dir.startsWith("rest:")) {
      return restCatalog(dir).loadTable(restIdent(dir));
    }
    return new HadoopTables(hadoopConf()).load(dir);
  }

  // Tables of an Iceberg REST catalog (Java's RESTCatalog): "rest:<uri>|<token>|ns.table"
  // wherever a table dir is taken (create, append, delete, current-metadata).  Tables on
  // S3 go through ResolvingFileIO -> S3FileIO with s3Properties() (the AWS_* environment)
  // under what the catalog vends: its keys, or s3.remote-signing-enabled, when Java's
  // S3V4RestSignerClient has every request signed by the catalog.
  private static org.apache.iceberg.rest.RESTCatalog restCatalog(String spec) {
    String[] p = spec.substring("rest:".length()).split("\\|", 3);
    if (p.length != 3) {
      throw new IllegalArgumentException(spec + ": want rest:<uri>|<token>|ns.table");
    }
    Map<String, String> props = new HashMap<>();
    // the FileIO settings for tables on S3 (ResolvingFileIO -> S3FileIO);
    // what the catalog vends with a table wins over them
    props.putAll(s3Properties());
    props.put(org.apache.iceberg.CatalogProperties.URI, p[0]);
    props.put("token", p[1]);
    org.apache.iceberg.rest.RESTCatalog c = new org.apache.iceberg.rest.RESTCatalog();
    c.setConf(hadoopConf());
    c.initialize("rest", props);
    return c;
  }

  private static org.apache.iceberg.catalog.TableIdentifier restIdent(String spec) {
    return org.apache.iceberg.catalog.TableIdentifier.parse(spec.split("\\|", 3)[2]);
  }

  private static String currentMetadata(Table t) {
    return ((HasTableOperations) t).operations().current().metadataFileLocation();
  }

  private static final Pattern TRANSFORM =
      Pattern.compile("\\s*(\\w+)\\s*(?:\\(\\s*(?:(\\d+)\\s*,\\s*)?([\\w.]+)\\s*\\))?\\s*");

  private static PartitionSpec parseSpec(Schema schema, String text) {
    PartitionSpec.Builder b = PartitionSpec.builderFor(schema);
    if (text == null || text.isBlank()) {
      return b.build();
    }
    for (String part : text.split(",(?![^(]*\\))")) {
      Matcher m = TRANSFORM.matcher(part);
      if (!m.matches()) {
        throw new IllegalArgumentException("bad partition field: " + part);
      }
      String fn = m.group(1);
      String col = m.group(3);
      if (col == null) {
        b.identity(fn);
        continue;
      }
      switch (fn) {
        case "identity":
          b.identity(col);
          break;
        case "bucket":
          b.bucket(col, Integer.parseInt(m.group(2)));
          break;
        case "truncate":
          b.truncate(col, Integer.parseInt(m.group(2)));
          break;
        case "year":
          b.year(col);
          break;
        case "month":
          b.month(col);
          break;
        case "day":
          b.day(col);
          break;
        case "hour":
          b.hour(col);
          break;
        case "void":
          b.alwaysNull(col);
          break;
        default:
          throw new IllegalArgumentException("unknown transform " + fn);
      }
    }
    return b.build();
  }

  private static void create(String[] args) throws IOException {
    if (args.length < 3) {
      usage();
    }
    Schema schema = SchemaParser.fromJson(Files.readString(Paths.get(args[2])));
    PartitionSpec spec = parseSpec(schema, option(args, "--partition"));
    Map<String, String> props = new HashMap<>();
    String fv = option(args, "--format-version");
    props.put(TableProperties.FORMAT_VERSION, fv != null ? fv : "2");
    Table t;
    if (args[1].startsWith("rest:")) {
      org.apache.iceberg.rest.RESTCatalog c = restCatalog(args[1]);
      org.apache.iceberg.catalog.TableIdentifier id = restIdent(args[1]);
      if (!c.namespaceExists(id.namespace())) {
        c.createNamespace(id.namespace());
      }
      t = c.createTable(id, schema, spec, props);
    } else {
      t = new HadoopTables(hadoopConf()).create(schema, spec, props, args[1]);
    }
    System.out.println(currentMetadata(t));
  }

  private static void append(String[] args) throws IOException {
    if (args.length < 3) {
      usage();
    }
    Table table = loadTable(args[1]);
    Schema schema = table.schema();
    PartitionSpec spec = table.spec();
    Map<String, List<Record>> byPartition = new LinkedHashMap<>();
    Map<String, PartitionKey> keys = new HashMap<>();
    InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
    try (BufferedReader in = Files.newBufferedReader(Paths.get(args[2]), StandardCharsets.UTF_8)) {
      String line;
      int lineNo = 0;
      while ((line = in.readLine()) != null) {
        lineNo++;
        if (line.isBlank()) {
          continue;
        }
        Record r;
        try {
          r = (Record) fromJson(schema.asStruct(), JSON.readTree(line));
        } catch (RuntimeException e) {
          throw new IllegalArgumentException(args[2] + ":" + lineNo + ": " + e.getMessage(), e);
        }
        PartitionKey key = new PartitionKey(spec, schema);
        key.partition(wrapper.wrap(r));
        String k = spec.partitionToPath(key);
        keys.putIfAbsent(k, key);
        byPartition.computeIfAbsent(k, x -> new ArrayList<>()).add(r);
      }
    }
    GenericFileWriterFactory factory =
        new GenericFileWriterFactory.Builder(table).dataFileFormat(FileFormat.PARQUET).build();
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0x7fffffff)
            .format(FileFormat.PARQUET)
            .build();
    AppendFiles op = table.newAppend();
    int n = 0;
    for (Map.Entry<String, List<Record>> e : byPartition.entrySet()) {
      PartitionKey key = keys.get(e.getKey());
      DataWriter<Record> w =
          factory.newDataWriter(
              spec.isUnpartitioned() ? files.newOutputFile() : files.newOutputFile(spec, key),
              spec,
              spec.isUnpartitioned() ? null : key);
      try (DataWriter<Record> closing = w) {
        for (Record r : e.getValue()) {
          closing.write(r);
        }
      }
      op.appendFile(w.toDataFile());
      n++;
    }
    if (n > 0) {
      op.commit();
    }
    System.out.println(currentMetadata(table));
  }

  private static void delete(String[] args) throws IOException {
    if (args.length < 4) {
      usage();
    }
    Table table = loadTable(args[1]);
    String column = args[2];
    JsonNode want = JSON.readTree(args[3]);
    Types.NestedField field = table.schema().findField(column);
    if (field == null) {
      throw new IllegalArgumentException("no column " + column);
    }
    Object value = fromJson(field.type(), want);
    Schema proj =
        new Schema(
            MetadataColumns.FILE_PATH, MetadataColumns.ROW_POSITION, field);
    // Positions of the matching rows, per data file, read with deletes applied.
    Map<String, List<Long>> positions = new LinkedHashMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).project(proj).build()) {
      for (Record r : rows) {
        Object v = r.get(2);
        if (v != null && v.equals(value)) {
          positions.computeIfAbsent(r.get(0).toString(), x -> new ArrayList<>()).add((Long) r.get(1));
        }
      }
    }
    if (positions.isEmpty()) {
      System.out.println(currentMetadata(table));
      return;
    }
    Map<String, DataFile> dataFiles = new HashMap<>();
    Map<String, DeleteFile> previousDVs = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask t : tasks) {
        dataFiles.put(t.file().location(), t.file());
        for (DeleteFile d : t.deletes()) {
          if (ContentFileUtil.isDV(d)) {
            previousDVs.put(t.file().location(), d);
          }
        }
      }
    }
    int formatVersion =
        ((HasTableOperations) table).operations().current().formatVersion();
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0x7fffffff)
            .format(FileFormat.PARQUET)
            .build();
    // Validation starts at the snapshot read above: DVs added before it are
    // not "concurrent" (the one a new DV replaces was added before it).
    RowDelta delta =
        table.newRowDelta().validateFromSnapshot(table.currentSnapshot().snapshotId());
    List<DeleteFile> deletes = new ArrayList<>();
    if (formatVersion >= 3) {
      OutputFileFactory puffin =
          OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0x7fffffff)
              .format(FileFormat.PUFFIN)
              .build();
      // A data file has at most one DV (v3 spec): the new one holds the
      // previous DV's positions too, and the commit removes the previous one.
      BaseDeleteLoader loader = new BaseDeleteLoader(d -> table.io().newInputFile(d.location()));
      DVFileWriter w =
          new BaseDVFileWriter(
              puffin,
              path ->
                  previousDVs.containsKey(path)
                      ? loader.loadPositionDeletes(List.of(previousDVs.get(path)), path)
                      : null);
      try (DVFileWriter closing = w) {
        for (Map.Entry<String, List<Long>> e : positions.entrySet()) {
          DataFile df = dataFiles.get(e.getKey());
          for (long pos : e.getValue()) {
            closing.delete(e.getKey(), pos, table.specs().get(df.specId()), df.partition());
          }
        }
      }
      deletes.addAll(w.result().deleteFiles());
      for (DeleteFile old : w.result().rewrittenDeleteFiles()) {
        delta.removeDeletes(old);
      }
    } else {
      GenericFileWriterFactory factory =
          new GenericFileWriterFactory.Builder(table)
              .dataFileFormat(FileFormat.PARQUET)
              .deleteFileFormat(FileFormat.PARQUET)
              .build();
      for (Map.Entry<String, List<Long>> e : positions.entrySet()) {
        DataFile df = dataFiles.get(e.getKey());
        PartitionSpec spec = table.specs().get(df.specId());
        PositionDeleteWriter<Record> w =
            factory.newPositionDeleteWriter(
                spec.isUnpartitioned()
                    ? files.newOutputFile()
                    : files.newOutputFile(spec, df.partition()),
                spec,
                spec.isUnpartitioned() ? null : df.partition());
        PositionDelete<Record> pd = PositionDelete.create();
        try (PositionDeleteWriter<Record> closing = w) {
          List<Long> sorted = new ArrayList<>(e.getValue());
          sorted.sort(null);
          for (long pos : sorted) {
            closing.write(pd.set(e.getKey(), pos));
          }
        }
        deletes.add(w.toDeleteFile());
      }
    }
    for (DeleteFile d : deletes) {
      delta.addDeletes(d);
    }
    delta.commit();
    System.out.println(currentMetadata(table));
  }

  private static void eqDelete(String[] args) throws IOException {
    if (args.length < 4) {
      usage();
    }
    Table table = loadTable(args[1]);
    Schema schema = table.schema();
    PartitionSpec spec = table.spec();
    List<Integer> idList = new ArrayList<>();
    for (String name : args[2].split(",")) {
      Types.NestedField f = schema.findField(name.trim());
      if (f == null) {
        throw new IllegalArgumentException("no column " + name);
      }
      idList.add(f.fieldId());
    }
    int[] ids = idList.stream().mapToInt(Integer::intValue).toArray();
    boolean full = false;
    for (int i = 4; i < args.length; i++) {
      full |= args[i].equals("--full-rows");
    }
    Schema rowSchema = full ? schema : schema.select(args[2].split(","));
    Map<String, List<Record>> byPartition = new LinkedHashMap<>();
    Map<String, PartitionKey> keys = new HashMap<>();
    InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
    try (BufferedReader in = Files.newBufferedReader(Paths.get(args[3]), StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        Record r = (Record) fromJson(schema.asStruct(), JSON.readTree(line));
        PartitionKey key = new PartitionKey(spec, schema);
        key.partition(wrapper.wrap(r));
        String k = spec.partitionToPath(key);
        keys.putIfAbsent(k, key);
        Record out = GenericRecord.create(rowSchema);
        for (Types.NestedField f : rowSchema.columns()) {
          out.setField(f.name(), r.getField(f.name()));
        }
        byPartition.computeIfAbsent(k, x -> new ArrayList<>()).add(out);
      }
    }
    GenericFileWriterFactory factory =
        new GenericFileWriterFactory.Builder(table)
            .dataFileFormat(FileFormat.PARQUET)
            .deleteFileFormat(FileFormat.PARQUET)
            .equalityFieldIds(ids)
            .equalityDeleteRowSchema(rowSchema)
            .build();
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0x7fffffff)
            .format(FileFormat.PARQUET)
            .build();
    RowDelta delta = table.newRowDelta();
    int n = 0;
    for (Map.Entry<String, List<Record>> e : byPartition.entrySet()) {
      PartitionKey key = keys.get(e.getKey());
      org.apache.iceberg.deletes.EqualityDeleteWriter<Record> w =
          factory.newEqualityDeleteWriter(
              spec.isUnpartitioned() ? files.newOutputFile() : files.newOutputFile(spec, key),
              spec,
              spec.isUnpartitioned() ? null : key);
      try (org.apache.iceberg.deletes.EqualityDeleteWriter<Record> closing = w) {
        for (Record r : e.getValue()) {
          closing.write(r);
        }
      }
      delta.addDeletes(w.toDeleteFile());
      n++;
    }
    if (n > 0) {
      delta.commit();
    }
    System.out.println(currentMetadata(table));
  }

  private static void rewrite(String[] args) throws IOException {
    Table table = loadTable(args[1]);
    Snapshot base = table.currentSnapshot();
    if (base == null) {
      System.out.println(currentMetadata(table));
      return;
    }
    if (((HasTableOperations) table).operations().current().formatVersion() >= 3) {
      throw new IllegalArgumentException("rewrite: format v2 tables only");
    }
    Map<String, DataFile> oldData = new LinkedHashMap<>();
    Map<String, DeleteFile> oldDeletes = new LinkedHashMap<>();
    // Live rows grouped by (spec, partition) of the file they come from.
    Map<String, List<Record>> groups = new LinkedHashMap<>();
    Map<String, DataFile> groupFile = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(base.snapshotId()).planFiles()) {
      for (FileScanTask t : tasks) {
        oldData.put(t.file().location(), t.file());
        for (DeleteFile d : t.deletes()) {
          oldDeletes.put(d.location(), d);
        }
      }
    }
    Schema schema = table.schema();
    Schema proj = new Schema(
        concat(List.of(MetadataColumns.FILE_PATH), schema.columns()));
    try (CloseableIterable<Record> rows =
        IcebergGenerics.read(table).useSnapshot(base.snapshotId()).project(proj).build()) {
      for (Record r : rows) {
        DataFile f = oldData.get(r.get(0).toString());
        String k = f.specId() + "/" + table.specs().get(f.specId()).partitionToPath(f.partition());
        groupFile.putIfAbsent(k, f);
        Record out = GenericRecord.create(schema);
        for (int i = 0; i < schema.columns().size(); i++) {
          out.set(i, r.get(i + 1));
        }
        groups.computeIfAbsent(k, x -> new ArrayList<>()).add(out);
      }
    }
    GenericFileWriterFactory factory =
        new GenericFileWriterFactory.Builder(table).dataFileFormat(FileFormat.PARQUET).build();
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0x7fffffff)
            .format(FileFormat.PARQUET)
            .build();
    RewriteFiles op =
        table.newRewrite()
            .validateFromSnapshot(base.snapshotId())
            .dataSequenceNumber(base.sequenceNumber());
    for (DataFile f : oldData.values()) {
      op.deleteFile(f);
    }
    for (DeleteFile d : oldDeletes.values()) {
      op.deleteFile(d);
    }
    for (Map.Entry<String, List<Record>> e : groups.entrySet()) {
      DataFile like = groupFile.get(e.getKey());
      PartitionSpec spec = table.specs().get(like.specId());
      DataWriter<Record> w =
          factory.newDataWriter(
              spec.isUnpartitioned()
                  ? files.newOutputFile()
                  : files.newOutputFile(spec, like.partition()),
              spec,
              spec.isUnpartitioned() ? null : like.partition());
      try (DataWriter<Record> closing = w) {
        for (Record r : e.getValue()) {
          closing.write(r);
        }
      }
      op.addFile(w.toDataFile());
    }
    op.commit();
    System.out.println(currentMetadata(table));
  }

  private static <T> List<T> concat(List<T> a, List<T> b) {
    List<T> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private static void expire(String[] args) {
    Table table = loadTable(args[1]);
    String keep = option(args, "--retain-last");
    table
        .expireSnapshots()
        .expireOlderThan(System.currentTimeMillis() + 1)
        .retainLast(keep == null ? 1 : Integer.parseInt(keep))
        .commit();
    System.out.println(currentMetadata(table));
  }

  // ------------------------------------------------------------------
  // JSON input (docs/jsonl.md "accepted" forms, the subset tests need)

  private static Object fromJson(Type type, JsonNode n) {
    if (n == null || n.isNull()) {
      return null;
    }
    switch (type.typeId()) {
      case BOOLEAN:
        return n.isBoolean() ? n.booleanValue() : Boolean.parseBoolean(n.asText());
      case INTEGER:
        return n.isNumber() ? n.intValue() : Integer.parseInt(n.asText());
      case LONG:
        return n.isNumber() ? n.longValue() : Long.parseLong(n.asText());
      case FLOAT:
        return n.isNumber() ? n.floatValue() : Float.parseFloat(n.asText());
      case DOUBLE:
        return n.isNumber() ? n.doubleValue() : Double.parseDouble(n.asText());
      case DECIMAL:
        return new BigDecimal(n.asText()).setScale(((Types.DecimalType) type).scale());
      case DATE:
        return n.isNumber() ? LocalDate.ofEpochDay(n.longValue()) : LocalDate.parse(n.asText());
      case TIME:
        return LocalTime.parse(n.asText());
      case TIMESTAMP:
      case TIMESTAMP_NANO: {
        boolean utc =
            type.typeId() == Type.TypeID.TIMESTAMP
                ? ((Types.TimestampType) type).shouldAdjustToUTC()
                : ((Types.TimestampNanoType) type).shouldAdjustToUTC();
        String s = n.asText().replace(' ', 'T');
        LocalDateTime ldt;
        if (s.endsWith("Z") || s.matches(".*[+-]\\d\\d:\\d\\d$")) {
          ldt = OffsetDateTime.parse(s).withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime();
        } else {
          ldt = LocalDateTime.parse(s);
        }
        return utc ? ldt.atOffset(ZoneOffset.UTC) : ldt;
      }
      case STRING:
        return n.isTextual() ? n.textValue() : n.toString();
      case UUID:
        return UUID.fromString(n.asText());
      case FIXED:
        return Base64.getDecoder().decode(n.asText());
      case BINARY:
        return ByteBuffer.wrap(Base64.getDecoder().decode(n.asText()));
      case STRUCT: {
        Types.StructType st = type.asStructType();
        GenericRecord r = GenericRecord.create(st);
        List<Types.NestedField> fields = st.fields();
        n.fieldNames()
            .forEachRemaining(
                k -> {
                  if (st.field(k) == null) {
                    throw new IllegalArgumentException("unknown column " + k);
                  }
                });
        for (int i = 0; i < fields.size(); i++) {
          r.set(i, fromJson(fields.get(i).type(), n.get(fields.get(i).name())));
        }
        return r;
      }
      case LIST: {
        List<Object> out = new ArrayList<>();
        for (JsonNode e : n) {
          out.add(fromJson(type.asListType().elementType(), e));
        }
        return out;
      }
      case MAP: {
        Types.MapType mt = type.asMapType();
        Map<Object, Object> out = new LinkedHashMap<>();
        if (n.isObject()) {
          n.fields().forEachRemaining(e -> out.put(fromJson(mt.keyType(), JSON.getNodeFactory().textNode(e.getKey())),
              fromJson(mt.valueType(), e.getValue())));
        } else {
          for (JsonNode e : n) {
            out.put(fromJson(mt.keyType(), e.get("key")), fromJson(mt.valueType(), e.get("value")));
          }
        }
        return out;
      }
      default:
        throw new IllegalArgumentException("unsupported type " + type);
    }
  }
}
