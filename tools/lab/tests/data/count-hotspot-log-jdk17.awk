# Independent counts of a JDK 16-21 metaspace log ("(non-class sm)" lines; docs/hotspot-log.md), not
# the importer's way: a "requested N words." line of an arena is an allocation of N words when the
# next line of that arena says "returning 0x.." or "taken from fbl"; "deallocating" is a free.
/\((non-class|class) sm\): requested [0-9]+ words\./ {
  match($0, /Arena @0x[0-9a-f]+ /); a = substr($0, RSTART, RLENGTH)
  match($0, /requested [0-9]+/); asked[a] = substr($0, RSTART + 10, RLENGTH - 10)
  klass[a] = ($0 ~ /\(class sm\)/)
}
/\((non-class|class) sm\): (returning 0x|taken from fbl)/ {
  match($0, /Arena @0x[0-9a-f]+ /); a = substr($0, RSTART, RLENGTH)
  allocs++; words += asked[a]; class_allocs += klass[a]
  if ($0 ~ /taken from fbl/) fbl++
}
/\((non-class|class) sm\): deallocating 0x/ { frees++ }
/CLMS @0x[0-9a-f]+ : born/ { loaders++ }
/CLMS @0x[0-9a-f]+ : dies\./ { deaths++ }
END { printf "loaders=%d deaths=%d allocations=%d class_allocations=%d allocated_bytes=%d frees=%d fbl_hits=%d\n", loaders, deaths, allocs, class_allocs, words * 8, frees, fbl }
