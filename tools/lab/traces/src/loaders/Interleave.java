import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

// Many throwaway loaders load their classes round-robin (their metaspace chunks interleave), then
// die in random order in 5 steps with a GC after each: the measured HotSpot workload in small.
public class Interleave {
  static final class Throwaway extends ClassLoader {
    Throwaway() { super(null); }
    Class<?> define(String name, byte[] bytes) { return defineClass(name, bytes, 0, bytes.length); }
  }

  static byte[] bytes(String name) throws Exception {
    try (InputStream in = Interleave.class.getResourceAsStream(name.replace('.', '/') + ".class")) {
      return in.readAllBytes();
    }
  }

  public static void main(String[] args) throws Exception {
    int loaders = Integer.parseInt(args[0]);
    String[] names = {"Unload$Payload", "Unload$Payload2"};
    byte[][] code = {bytes(names[0]), bytes(names[1])};
    List<Throwaway> alive = new ArrayList<>();
    for (int i = 0; i < loaders; i++) alive.add(new Throwaway());
    List<Object> objects = new ArrayList<>();
    for (int c = 0; c < names.length; c++)
      for (Throwaway l : alive) {
        Class<?> k = l.define(names[c], code[c]);
        if (c == 1) { Object o = k.getDeclaredConstructor().newInstance(); ((Runnable) o).run(); objects.add(o); }
      }
    Collections.shuffle(alive, new Random(42));
    objects.clear();
    for (int step = 1; step <= 5; step++) {
      int keep = loaders - loaders * step / 5;
      while (alive.size() > keep) alive.remove(alive.size() - 1);
      System.gc();
      System.gc();
    }
    System.out.println("done " + alive.size());
  }
}
