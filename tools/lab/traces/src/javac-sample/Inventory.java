import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

// A generic container with a few stream queries.
public final class Inventory<T extends Comparable<T>> implements Iterable<T> {
  private final List<T> items = new ArrayList<>();

  @SafeVarargs
  public final Inventory<T> add(T... more) {
    Collections.addAll(items, more);
    return this;
  }

  public Optional<T> largest() { return items.stream().max(Comparator.naturalOrder()); }

  public <K> Map<K, List<T>> groupBy(Function<? super T, ? extends K> key) {
    return items.stream().collect(Collectors.groupingBy(key, Collectors.toList()));
  }

  public <R> List<R> map(Function<? super T, ? extends R> f) { return items.stream().<R>map(f).toList(); }

  @Override public java.util.Iterator<T> iterator() { return items.iterator(); }
}
