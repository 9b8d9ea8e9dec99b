# Independent counts of a JDK 25 metaspace log (the rules of hotspot-ul-log.md, not the importer's).
/CLMS @0x[0-9a-f]+ : born/ { loaders++ }
/CLMS @0x[0-9a-f]+ : dies\./ { deaths++ }
/returning block .* taken from (arena|fbl), / {
  allocs++
  if ($0 ~ /\(class arena\)/) class_allocs++
  match($0, /word size [0-9]+\)/); w = substr($0, RSTART + 10, RLENGTH - 11); words += w
  if (match($0, /wastage block \(@0x[0-9a-f]+ word size [1-9]/)) {
    s = substr($0, RSTART + 16); split(s, parts, " "); pending[parts[1]] = 1
  }
}
/added to fbl: block \(@/ {
  match($0, /block \(@0x[0-9a-f]+/); p = substr($0, RSTART + 8, RLENGTH - 8)
  if (p in pending) { wastage++; delete pending[p] } else { frees++ }
}
END { printf "loaders=%d deaths=%d allocations=%d class_allocations=%d allocated_bytes=%d frees=%d wastage=%d\n", loaders, deaths, allocs, class_allocs, words * 8, frees, wastage }
