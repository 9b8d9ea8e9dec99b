import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

// Defines a few small classes in throwaway loaders, drops them in steps and collects, so that the
// metaspace log shows loaders dying (class unloading).
public class Unload {
  public static class Payload implements Runnable {
    int a; long b; String c = "x";
    public void run() { a += 1; b += a; c = c + a; }
    public int one() { return a * 3 + (int) b; }
    public long two(long x) { return x * b + a; }
  }
  public static class Payload2 extends Payload {
    double d;
    public void run() { super.run(); d += 0.5; }
    public String three() { return c + d; }
  }

  static final class Throwaway extends ClassLoader {
    Throwaway() { super(null); }
    Class<?> define(String name, byte[] bytes) { return defineClass(name, bytes, 0, bytes.length); }
  }

  static byte[] bytes(String name) throws Exception {
    try (InputStream in = Unload.class.getResourceAsStream(name.replace('.', '/') + ".class")) {
      return in.readAllBytes();
    }
  }

  public static void main(String[] args) throws Exception {
    byte[] p1 = bytes("Unload$Payload");
    byte[] p2 = bytes("Unload$Payload2");
    List<Object> keep = new ArrayList<>();
    for (int round = 0; round < 3; round++) {
      List<Object> batch = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        Throwaway l = new Throwaway();
        l.define("Unload$Payload", p1);
        Class<?> c = l.define("Unload$Payload2", p2);
        Object o = c.getDeclaredConstructor().newInstance();
        ((Runnable) o).run();
        (i % 4 == 0 ? keep : batch).add(o);
      }
      // A lambda spins a hidden class (a ClassMirrorHolder loader) in the JDK's own loaders.
      Runnable r = () -> {};
      r.run();
      batch = null;
      System.gc();
    }
    keep.clear();
    System.gc();
    System.out.println("done");
  }
}
