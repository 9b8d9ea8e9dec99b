package payload;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/** What each churned loader runs: streams and lambdas (hidden classes), an enum, inner classes. */
public class Workload {
  public static int run(int n) {
    List<Shape> shapes = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      shapes.add(i % 2 == 0 ? new Circle(i + n % 5) : new Square(i + 1));
    }
    Map<Kind, Integer> byKind = new TreeMap<>();
    for (Shape s : shapes) {
      byKind.merge(s.kind(), (int) s.area(), Integer::sum);
    }
    Function<Integer, Integer> twice = x -> x * 2;
    int sum = IntStream.range(0, 10).map(x -> x + n).filter(x -> x % 3 != 0).sum();
    String names = shapes.stream().map(Shape::name).distinct().collect(Collectors.joining(","));
    return twice.apply(sum) + byKind.size() + names.length() + new Counter().count(n);
  }

  static final class Counter {
    int count(int n) {
      Runnable r = () -> { };
      r.run();
      return Integer.bitCount(n);
    }
  }
}
