import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.IntUnaryOperator;

// Many class loaders of three kinds come and go in waves, so that the metaspace log shows what a
// framework or a scripting runtime does to metaspace:
//  - throwaway loaders (standard), each defining 1 to 4 classes of different sizes from the bytes of
//    the nested Payload classes below (one of them spins lambdas, which live in its loader);
//  - hidden classes defined one by one (Lookup.defineHiddenClass, not strong): each gets a metaspace
//    of its own (HotSpot's ClassMirrorHolder, a micro loader);
//  - a few long-lived loaders that survive every wave (the fragmentation that stays).
// After each wave most of its loaders and hidden classes are dropped and System.gc() unloads them.
// Usage: java -Xshare:off -cp DIR ManyLoaders [waves=6] [loaders-per-wave=30] [hidden-per-wave=40]
public class ManyLoaders {
  public static class Small implements Runnable {
    int a;
    public void run() { a += 1; }
  }

  public static class Medium implements Runnable {
    long total; String name = "medium";
    public void run() {
      IntUnaryOperator square = x -> x * x;
      IntUnaryOperator plus = x -> x + name.length();
      for (int i = 0; i < 8; i++) total += square.andThen(plus).applyAsInt(i);
    }
    public long total() { return total; }
    public String describe() { return name + "=" + total; }
  }

  public static class Large extends Medium {
    int f0, f1, f2, f3, f4, f5, f6, f7; double d0, d1, d2, d3; String s0 = "zero", s1 = "one", s2 = "two";
    public void run() { super.run(); m0(); m1(); m2(); m3(); m4(); m5(); m6(); m7(); }
    int m0() { return f0 += s0.length() + f1; }
    int m1() { return f1 += s1.length() * f2 + (int) d0; }
    int m2() { return f2 += s2.hashCode() % 7 + f3; }
    int m3() { d1 += f3 * 0.5; return f3 += f4 + 3; }
    int m4() { d2 = Math.sqrt(d1 + f4); return f4 += (int) d2; }
    int m5() { d3 = d2 * d1; return f5 += f6 ^ f7; }
    int m6() { StringBuilder b = new StringBuilder(); for (int i = 0; i < 3; i++) b.append(s0).append(i); return f6 += b.length(); }
    int m7() { return f7 += switch (f0 % 4) { case 0 -> 1; case 1 -> 2; case 2 -> f1; default -> f2; }; }
    public String describe() { return super.describe() + f0 + f1 + f2 + f3 + f4 + f5 + f6 + f7 + d0 + d1 + d2 + d3; }
  }

  public static class Table implements Runnable {
    static final String[] NAMES = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
    final Map<String, Integer> map = new HashMap<>();
    public void run() {
      for (String n : NAMES) map.merge(n, n.length(), Integer::sum);
      map.replaceAll((k, v) -> v * 2);
    }
  }

  // Defines the classes it is asked for from the bytes it was given (parent: the boot loader only).
  static final class Throwaway extends ClassLoader {
    private final Map<String, byte[]> code;
    Throwaway(Map<String, byte[]> code) { super(null); this.code = code; }
    @Override protected Class<?> findClass(String name) throws ClassNotFoundException {
      byte[] b = code.get(name);
      if (b == null) throw new ClassNotFoundException(name);
      return defineClass(name, b, 0, b.length);
    }
  }

  static byte[] bytes(String name) throws Exception {
    try (InputStream in = ManyLoaders.class.getResourceAsStream(name.replace('.', '/') + ".class")) {
      return in.readAllBytes();
    }
  }

  public static void main(String[] args) throws Exception {
    int waves = args.length > 0 ? Integer.parseInt(args[0]) : 6;
    int loadersPerWave = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int hiddenPerWave = args.length > 2 ? Integer.parseInt(args[2]) : 40;
    String[] names = {"ManyLoaders$Small", "ManyLoaders$Medium", "ManyLoaders$Large", "ManyLoaders$Table"};
    Map<String, byte[]> code = new HashMap<>();
    for (String n : names) code.put(n, bytes(n));
    byte[] hiddenBytes = bytes("HiddenTemplate");
    MethodHandles.Lookup lookup = MethodHandles.lookup();
    Random random = new Random(42);

    List<Object> longLived = new ArrayList<>();
    long checksum = 0;
    for (int wave = 0; wave < waves; wave++) {
      List<Object> wavesObjects = new ArrayList<>();
      for (int i = 0; i < loadersPerWave; i++) {
        Throwaway loader = new Throwaway(code);
        int classes = 1 + random.nextInt(names.length);
        for (int c = 0; c < classes; c++) {
          Object o = loader.loadClass(names[(i + c) % names.length]).getDeclaredConstructor().newInstance();
          ((Runnable) o).run();
          (i % 10 == 0 ? longLived : wavesObjects).add(o);
        }
      }
      for (int h = 0; h < hiddenPerWave; h++) {
        Class<?> hidden = lookup.defineHiddenClass(hiddenBytes, true).lookupClass();
        Runnable r = (Runnable) hidden.getDeclaredConstructor().newInstance();
        r.run();
        checksum += r.hashCode() & 1;
        (h % 8 == 0 ? longLived : wavesObjects).add(r);
      }
      wavesObjects.clear();
      System.gc();
    }
    longLived.clear();
    System.gc();
    System.gc();
    System.out.println("done " + waves + " waves " + (checksum >= 0));
  }
}

// The class each hidden class is made from (same package as ManyLoaders, whose Lookup defines it).
class HiddenTemplate implements Runnable {
  private int calls;
  HiddenTemplate() {}
  public void run() { calls += String.valueOf(System.identityHashCode(this)).length(); }
}
