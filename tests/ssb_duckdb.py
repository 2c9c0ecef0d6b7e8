#!/usr/bin/env python3
"""Runs the 13 SSB queries of the specification in DuckDB over dbgen-format .tbl files.

Usage: ssb_duckdb.py TBL_DIR [PARQUET_DIR]

Prints, per query, a line `== q1.1` and then one line per result row: the group columns in
tessera's order, the aggregate last, separated by `|`, rows in the specification's ORDER BY
order (flight 3 breaks revenue ties by the other group columns, as tessera does). With
PARQUET_DIR, also writes each table there as DuckDB's `COPY ... TO ... (FORMAT parquet)` does,
`d_datekey` as a DATE. Exits with status 3 when the duckdb module is missing.
"""
import sys

try:
    import duckdb
except ImportError:
    print("the duckdb Python module is missing (pip install duckdb)", file=sys.stderr)
    sys.exit(3)

# Columns of dbgen's .tbl files, in file order; the trailing `|` gives one more, empty field.
SCHEMA = {
    "lineorder": [
        ("lo_orderkey", "INTEGER"), ("lo_linenumber", "INTEGER"), ("lo_custkey", "INTEGER"),
        ("lo_partkey", "INTEGER"), ("lo_suppkey", "INTEGER"), ("lo_orderdate", "INTEGER"),
        ("lo_orderpriority", "VARCHAR"), ("lo_shippriority", "INTEGER"),
        ("lo_quantity", "INTEGER"), ("lo_extendedprice", "INTEGER"),
        ("lo_ordtotalprice", "INTEGER"), ("lo_discount", "INTEGER"), ("lo_revenue", "INTEGER"),
        ("lo_supplycost", "INTEGER"), ("lo_tax", "INTEGER"), ("lo_commitdate", "INTEGER"),
        ("lo_shipmode", "VARCHAR"),
    ],
    "part": [
        ("p_partkey", "INTEGER"), ("p_name", "VARCHAR"), ("p_mfgr", "VARCHAR"),
        ("p_category", "VARCHAR"), ("p_brand1", "VARCHAR"), ("p_color", "VARCHAR"),
        ("p_type", "VARCHAR"), ("p_size", "INTEGER"), ("p_container", "VARCHAR"),
    ],
    "supplier": [
        ("s_suppkey", "INTEGER"), ("s_name", "VARCHAR"), ("s_address", "VARCHAR"),
        ("s_city", "VARCHAR"), ("s_nation", "VARCHAR"), ("s_region", "VARCHAR"),
        ("s_phone", "VARCHAR"),
    ],
    "customer": [
        ("c_custkey", "INTEGER"), ("c_name", "VARCHAR"), ("c_address", "VARCHAR"),
        ("c_city", "VARCHAR"), ("c_nation", "VARCHAR"), ("c_region", "VARCHAR"),
        ("c_phone", "VARCHAR"), ("c_mktsegment", "VARCHAR"),
    ],
    "date": [
        ("d_datekey", "INTEGER"), ("d_date", "VARCHAR"), ("d_dayofweek", "VARCHAR"),
        ("d_month", "VARCHAR"), ("d_year", "INTEGER"), ("d_yearmonthnum", "INTEGER"),
        ("d_yearmonth", "VARCHAR"), ("d_daynuminweek", "INTEGER"),
        ("d_daynuminmonth", "INTEGER"), ("d_daynuminyear", "INTEGER"),
        ("d_monthnuminyear", "INTEGER"), ("d_weeknuminyear", "INTEGER"),
        ("d_sellingseason", "VARCHAR"), ("d_lastdayinweekfl", "INTEGER"),
        ("d_lastdayinmonthfl", "INTEGER"), ("d_holidayfl", "INTEGER"),
        ("d_weekdayfl", "INTEGER"),
    ],
}

# The specification's queries (SSB revision 3), with the select list in tessera's column
# order (aggregate last); `date` is quoted as a table name.
Q3_FROM = """FROM customer, lineorder, supplier, "date"
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey"""
Q4_FROM = """FROM "date", customer, supplier, part, lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey
  AND lo_orderdate = d_datekey"""
Q2_FROM = """FROM lineorder, "date", part, supplier
WHERE lo_orderdate = d_datekey AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey"""

QUERIES = {
    "q1.1": """SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM lineorder, "date"
WHERE lo_orderdate = d_datekey AND d_year = 1993
  AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25""",
    "q1.2": """SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM lineorder, "date"
WHERE lo_orderdate = d_datekey AND d_yearmonthnum = 199401
  AND lo_discount BETWEEN 4 AND 6 AND lo_quantity BETWEEN 26 AND 35""",
    "q1.3": """SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM lineorder, "date"
WHERE lo_orderdate = d_datekey AND d_weeknuminyear = 6 AND d_year = 1994
  AND lo_discount BETWEEN 5 AND 7 AND lo_quantity BETWEEN 26 AND 35""",
    "q2.1": f"""SELECT d_year, p_brand1, sum(lo_revenue) {Q2_FROM}
  AND p_category = 'MFGR#12' AND s_region = 'AMERICA'
GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1""",
    "q2.2": f"""SELECT d_year, p_brand1, sum(lo_revenue) {Q2_FROM}
  AND p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228' AND s_region = 'ASIA'
GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1""",
    "q2.3": f"""SELECT d_year, p_brand1, sum(lo_revenue) {Q2_FROM}
  AND p_brand1 = 'MFGR#2221' AND s_region = 'EUROPE'
GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1""",
    "q3.1": f"""SELECT c_nation, s_nation, d_year, sum(lo_revenue) AS revenue {Q3_FROM}
  AND c_region = 'ASIA' AND s_region = 'ASIA' AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_nation, s_nation, d_year ORDER BY d_year ASC, revenue DESC, c_nation, s_nation""",
    "q3.2": f"""SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue {Q3_FROM}
  AND c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES'
  AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC, c_city, s_city""",
    "q3.3": f"""SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue {Q3_FROM}
  AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
  AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC, c_city, s_city""",
    "q3.4": f"""SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue {Q3_FROM}
  AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5') AND d_yearmonth = 'Dec1997'
GROUP BY c_city, s_city, d_year ORDER BY d_year ASC, revenue DESC, c_city, s_city""",
    "q4.1": f"""SELECT d_year, c_nation, sum(lo_revenue - lo_supplycost) AS profit {Q4_FROM}
  AND c_region = 'AMERICA' AND s_region = 'AMERICA'
  AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, c_nation ORDER BY d_year, c_nation""",
    "q4.2": f"""SELECT d_year, s_nation, p_category, sum(lo_revenue - lo_supplycost) AS profit
{Q4_FROM}
  AND c_region = 'AMERICA' AND s_region = 'AMERICA' AND (d_year = 1997 OR d_year = 1998)
  AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, s_nation, p_category ORDER BY d_year, s_nation, p_category""",
    "q4.3": f"""SELECT d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) AS profit
{Q4_FROM}
  AND c_region = 'AMERICA' AND s_nation = 'UNITED STATES'
  AND (d_year = 1997 OR d_year = 1998) AND p_category = 'MFGR#14'
GROUP BY d_year, s_city, p_brand1 ORDER BY d_year, s_city, p_brand1""",
}


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    tbl_dir = sys.argv[1]
    con = duckdb.connect()
    for table, cols in SCHEMA.items():
        columns = ", ".join(f"'{n}': '{t}'" for n, t in cols + [("trailing_empty", "VARCHAR")])
        con.execute(
            f"""CREATE TABLE "{table}" AS SELECT * EXCLUDE (trailing_empty) FROM read_csv(
                '{tbl_dir}/{table}.tbl', delim = '|', header = false, quote = '', escape = '',
                columns = {{{columns}}})"""
        )
    for name, sql in QUERIES.items():
        print(f"== {name}")
        for row in con.execute(sql).fetchall():
            if row[-1] is None:  # SUM over no rows
                continue
            print("|".join(str(v) for v in row))
    if len(sys.argv) == 3:
        out = sys.argv[2]
        for table in SCHEMA:
            select = f'SELECT * FROM "{table}"'
            if table == "date":
                select = ("SELECT * REPLACE (strptime(d_datekey::VARCHAR, '%Y%m%d')::DATE "
                          'AS d_datekey) FROM "date"')
            con.execute(f"COPY ({select}) TO '{out}/{table}.parquet' (FORMAT parquet)")


if __name__ == "__main__":
    main()
