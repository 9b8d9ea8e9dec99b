import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.IntUnaryOperator;

/**
 * Class loaders created and dropped in waves, the way application servers and scripting engines
 * churn them: each loader defines its own copy of the payload classes (lambdas, an enum, inner
 * classes, an interface), runs them, and calls a method by reflection often enough for the VM to
 * generate an accessor class in a loader of its own. Each wave keeps a random part of the
 * loaders alive into the next one; metadata GCs come from the metaspace's own threshold, never
 * from System.gc().
 *
 *   java ClassChurn PAYLOAD_DIR [WAVES] [LOADERS_PER_WAVE] [SEED]
 */
public class ClassChurn {
  public static void main(String[] args) throws Exception {
    URL payload = new File(args[0]).toURI().toURL();
    int waves = args.length > 1 ? Integer.parseInt(args[1]) : 12;
    int perWave = args.length > 2 ? Integer.parseInt(args[2]) : 400;
    Random random = new Random(args.length > 3 ? Long.parseLong(args[3]) : 42);
    List<URLClassLoader> alive = new ArrayList<>();
    long checksum = 0;
    for (int wave = 0; wave < waves; wave++) {
      for (int i = 0; i < perWave; i++) {
        URLClassLoader loader = new URLClassLoader(new URL[] {payload},
                                                   ClassLoader.getPlatformClassLoader());
        Class<?> main = loader.loadClass("payload.Workload");
        Method run = main.getMethod("run", int.class);
        // Past the inflation threshold (15 calls): a generated accessor in a loader of its own.
        for (int k = 0; k < 20; k++) {
          checksum += (Integer) run.invoke(null, k + i);
        }
        IntUnaryOperator op = x -> x * 31 + 7;  // a lambda of the driver itself, for contrast
        checksum += op.applyAsInt(i);
        alive.add(loader);
      }
      // A random part survives into the next wave; the rest become unreachable.
      List<URLClassLoader> kept = new ArrayList<>();
      for (URLClassLoader l : alive) {
        if (random.nextInt(4) == 0) {
          kept.add(l);
        } else {
          l.close();
        }
      }
      alive = kept;
      System.out.println("wave " + wave + ": " + alive.size() + " loaders kept, checksum " + checksum);
    }
  }
}
