/*
 * bench/ingest/LuceneIngest.java - the Lucene side of bench/ingest: the same
 * rows as our append stream, written with Lucene 8.7's IndexWriter (Debian
 * liblucene8-java) and read back by near-real-time readers.
 *
 *   java -cp lucene-core-8.7.0.jar:DIR LuceneIngest ROWS.bin N DIM BATCH WRITERS LAT INDEX_DIR
 *
 * ROWS.bin (written by bench.py): N records of id int64, cat uint8 (c0..c7),
 * x float64, vec DIM x float32, little-endian.  Each row is one document:
 * id as LongPoint (exact-match queries) + stored, cat as StringField (an
 * inverted index, like ours), x and vec stored (Lucene 8 has no vector
 * index: KNN vectors arrived in 9.0, so only our side builds HNSW).
 *
 * Three measurements, printed as "key value" lines:
 *   batch      one writer; each batch of BATCH rows is addDocuments() then
 *              commit() (fsyncs the new segment): acknowledged = durable,
 *              as ours with fsync per batch
 *   group      WRITERS threads add batches; a committer thread commits every
 *              5 ms when something is pending, and a writer returns once a
 *              commit covers its sequence number (group commit, as ours)
 *   latency    one document + commit, then polling an exact id query through
 *              a SearcherManager that a background thread refreshes every
 *              second (Elasticsearch's default refresh), LAT samples at
 *              random gaps of up to 200 ms: acknowledge-to-searchable
 */
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public final class LuceneIngest {
  static int n, dim, batch, writers, lat;
  static ByteBuffer rows;
  static int recLen;

  static Document doc(int i) {
    int off = i * recLen;
    long id = rows.getLong(off);
    int cat = rows.get(off + 8) & 0xff;
    double x = rows.getDouble(off + 9);
    byte[] vec = new byte[4 * dim];
    for (int k = 0; k < vec.length; k++) {
      vec[k] = rows.get(off + 17 + k);
    }
    return doc(id, cat, x, vec);
  }

  static Document doc(long id, int cat, double x, byte[] vec) {
    Document d = new Document();
    d.add(new LongPoint("id", id));
    d.add(new StoredField("id", id));
    d.add(new StringField("cat", "c" + cat, Field.Store.YES));
    d.add(new StoredField("x", x));
    d.add(new StoredField("vec", new BytesRef(vec)));
    return d;
  }

  static List<Document> docs(int from, int to) {
    List<Document> out = new ArrayList<>(to - from);
    for (int i = from; i < to; i++) {
      out.add(doc(i));
    }
    return out;
  }

  static IndexWriter writer(Path dir) throws IOException {
    return new IndexWriter(FSDirectory.open(dir), new IndexWriterConfig());
  }

  static double batchRun(Path dir) throws IOException {
    try (IndexWriter w = writer(dir)) {
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i += batch) {
        w.addDocuments(docs(i, Math.min(n, i + batch)));
        w.commit();
      }
      double s = (System.nanoTime() - t0) / 1e9;
      if (w.getDocStats().numDocs != n) {
        throw new IllegalStateException("lost documents");
      }
      return n / s;
    }
  }

  static double groupRun(Path dir) throws Exception {
    try (IndexWriter w = writer(dir)) {
      AtomicLong committed = new AtomicLong(-1);
      AtomicLong pending = new AtomicLong(0);
      Object mon = new Object();
      volatile_stop[0] = false;
      Thread committer =
          new Thread(
              () -> {
                try {
                  while (!volatile_stop[0]) {
                    if (pending.get() > 0) {
                      pending.set(0);
                      long seq = w.commit();
                      synchronized (mon) {
                        committed.set(Math.max(committed.get(), seq));
                        mon.notifyAll();
                      }
                    }
                    Thread.sleep(5);
                  }
                } catch (Exception e) {
                  throw new RuntimeException(e);
                }
              });
      committer.start();
      int nb = (n + batch - 1) / batch;
      Thread[] ts = new Thread[writers];
      long t0 = System.nanoTime();
      for (int k = 0; k < writers; k++) {
        final int me = k;
        ts[k] =
            new Thread(
                () -> {
                  try {
                    for (int b = me; b < nb; b += writers) {
                      long seq = w.addDocuments(docs(b * batch, Math.min(n, (b + 1) * batch)));
                      pending.incrementAndGet();
                      synchronized (mon) {
                        while (committed.get() < seq) {
                          mon.wait();
                        }
                      }
                    }
                  } catch (Exception e) {
                    throw new RuntimeException(e);
                  }
                });
        ts[k].start();
      }
      for (Thread t : ts) {
        t.join();
      }
      double s = (System.nanoTime() - t0) / 1e9;
      volatile_stop[0] = true;
      committer.join();
      if (w.getDocStats().numDocs != n) {
        throw new IllegalStateException("lost documents");
      }
      return n / s;
    }
  }

  static final boolean[] volatile_stop = {false};

  static double[] latencyRun(Path dir) throws Exception {
    try (IndexWriter w = writer(dir)) {
      int warm = Math.max(1, n / 10);
      for (int i = 0; i < warm; i += batch) {
        w.addDocuments(docs(i, Math.min(warm, i + batch)));
      }
      w.commit();
      SearcherManager mgr = new SearcherManager(w, null);
      volatile_stop[0] = false;
      Thread refresher =
          new Thread(
              () -> {
                try {
                  while (!volatile_stop[0]) {
                    Thread.sleep(1000);
                    mgr.maybeRefresh();
                  }
                } catch (Exception e) {
                  throw new RuntimeException(e);
                }
              });
      refresher.start();
      Random rng = new Random(7);
      double[] out = new double[lat];
      byte[] vec = new byte[4 * dim];
      for (int k = 0; k < lat; k++) {
        long id = 1_000_000_000L + k;
        w.addDocument(doc(id, k % 8, 0.5, vec));
        w.commit();
        long ack = System.nanoTime();
        while (true) {
          IndexSearcher s = mgr.acquire();
          try {
            if (s.count(LongPoint.newExactQuery("id", id)) == 1) {
              break;
            }
          } finally {
            mgr.release(s);
          }
          Thread.sleep(2);
        }
        out[k] = (System.nanoTime() - ack) / 1e9;
        Thread.sleep((long) (rng.nextDouble() * 200));
      }
      volatile_stop[0] = true;
      refresher.join();
      mgr.close();
      return out;
    }
  }

  public static void main(String[] a) throws Exception {
    byte[] data = Files.readAllBytes(Paths.get(a[0]));
    n = Integer.parseInt(a[1]);
    dim = Integer.parseInt(a[2]);
    batch = Integer.parseInt(a[3]);
    writers = Integer.parseInt(a[4]);
    lat = Integer.parseInt(a[5]);
    Path root = Paths.get(a[6]);
    recLen = 8 + 1 + 8 + 4 * dim;
    if (data.length != (long) n * recLen) {
      throw new IllegalArgumentException("rows file holds " + data.length + " bytes, want "
          + (long) n * recLen);
    }
    rows = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    System.out.println("batch " + batchRun(root.resolve("a")));
    System.out.println("group " + groupRun(root.resolve("b")));
    double[] l = latencyRun(root.resolve("c"));
    Arrays.sort(l);
    System.out.println("p50 " + l[(int) Math.round(0.50 * (l.length - 1))]);
    System.out.println("p99 " + l[(int) Math.round(0.99 * (l.length - 1))]);
  }
}
