//! The fixed dictionaries of SSB's string columns.
//!
//! Every string column of SSB draws from a small domain that the specification (and dbgen's
//! `dists.dss`) fixes, so the dictionaries are fixed too: they do not depend on the data, and
//! the generator, the `.tbl` loader and every data directory agree on the codes. Each
//! dictionary is **sorted** (byte order): code `i` is the `i`-th smallest string. So a string
//! comparison in a query (`=`, `BETWEEN`, `<`) is the same comparison on codes (for example
//! `p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228'` is one contiguous code range), and an
//! `ORDER BY` on a string column is an `ORDER BY` on its codes.
use std::collections::HashMap;
use std::sync::OnceLock;

/// A sorted dictionary of one string domain.
#[derive(Debug)]
pub struct Dict {
    name: &'static str,
    values: Vec<String>,
    aliases: Vec<Alias>,
    /// Value or alias -> (code, `NO_ALIAS` or the alias' index in `aliases`).
    index: HashMap<String, (i32, u32)>,
}

/// Another spelling of a dictionary value that the `.tbl` loader accepts: what the reference
/// dbgen writes where it departs from the specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The spelling in dbgen's files, e.g. `Augest`.
    pub spelling: &'static str,
    /// The specification's value it stands for, e.g. `August`.
    pub value: &'static str,
}

/// Marks a canonical value in `Dict::index`.
const NO_ALIAS: u32 = u32::MAX;

impl Dict {
    /// Sorts `values` and indexes them with their `aliases`.
    fn new(name: &'static str, values: Vec<String>, aliases: &[Alias]) -> Dict {
        let mut values = values;
        values.sort_unstable();
        values.dedup();
        let mut index: HashMap<String, (i32, u32)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), (i as i32, NO_ALIAS)))
            .collect();
        for (i, a) in aliases.iter().enumerate() {
            let code = index[a.value].0;
            let old = index.insert(a.spelling.to_string(), (code, i as u32));
            assert!(
                old.is_none(),
                "alias {a:?} of the {name} dictionary is a value"
            );
        }
        Dict {
            name,
            values,
            aliases: aliases.to_vec(),
            index,
        }
    }

    /// The dictionary's name (also its file name in a data directory).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the dictionary has no values (never true for SSB's).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in code order.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// The code of `value` (or of one of its accepted aliases).
    pub fn code(&self, value: &str) -> Option<i32> {
        self.index.get(value).map(|e| e.0)
    }

    /// The code of `value` and, when `value` is an alias, its index in [`Self::aliases`].
    #[inline]
    pub fn resolve(&self, value: &str) -> Option<(i32, Option<usize>)> {
        self.index
            .get(value)
            .map(|&(code, a)| (code, (a != NO_ALIAS).then_some(a as usize)))
    }

    /// The other spellings this dictionary accepts (dbgen's), in a fixed order.
    pub fn aliases(&self) -> &[Alias] {
        &self.aliases
    }

    /// The string of `code`, if it is one.
    pub fn get(&self, code: i32) -> Option<&str> {
        usize::try_from(code)
            .ok()
            .and_then(|i| self.values.get(i))
            .map(String::as_str)
    }

    /// The string of `code`, or `"<invalid code N>"`.
    pub fn decode(&self, code: i32) -> String {
        self.get(code).map_or_else(
            || format!("<invalid {} code {code}>", self.name),
            str::to_string,
        )
    }

    /// The code of a value that is part of the benchmark's definition (a query constant, a
    /// domain value the generator picks): a missing one is a bug in tessera, not bad input.
    pub(crate) fn known(&self, value: &str) -> i32 {
        match self.code(value) {
            Some(c) => c,
            None => unreachable!("'{value}' is not in the {} dictionary", self.name),
        }
    }
}

/// The five regions, in dbgen's order (a nation's region is an index into this list).
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// The 25 TPC-H nations in dbgen's order (phone country codes are `10 + index`), with the
/// index of their region in [`REGIONS`].
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

/// Market segments.
pub const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "HOUSEHOLD",
    "MACHINERY",
];

/// Order priorities.
pub const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];

/// Ship modes.
pub const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP"];

/// The 92 colors of TPC-H's `dists.dss` (p_color and the words of p_name).
pub const COLORS: [&str; 92] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];

/// p_type is one word of each list (6 x 5 x 5 = 150 types).
pub const TYPE_WORDS: ([&str; 6], [&str; 5], [&str; 5]) = (
    ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"],
    ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"],
    ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"],
);

/// p_container is one word of each list (5 x 8 = 40 containers).
pub const CONTAINER_WORDS: ([&str; 5], [&str; 8]) = (
    ["SM", "LG", "MED", "JUMBO", "WRAP"],
    ["CASE", "BOX", "BAG", "JAR", "PACK", "PKG", "CAN", "DRUM"],
);

/// Month names (d_month), January first.
pub const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Day names (d_dayofweek), Sunday first (d_daynuminweek 1).
pub const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Selling seasons (d_sellingseason).
pub const SEASONS: [&str; 5] = ["Christmas", "Summer", "Winter", "Spring", "Fall"];

/// lo_orderpriority as the reference dbgen writes it: its lineorder keeps 11 characters of
/// the priority (`opriority` is a `char[MAXAGG_LEN + 1]`).
pub const PRIORITY_ALIASES: [Alias; 1] = [Alias {
    spelling: "4-NOT SPECI",
    value: "4-NOT SPECIFIED",
}];

/// d_month as the reference dbgen writes it: `month_names` in its `build.c` misspells two
/// months (d_yearmonth keeps their first three letters, which are right).
pub const MONTH_ALIASES: [Alias; 2] = [
    Alias {
        spelling: "Augest",
        value: "August",
    },
    Alias {
        spelling: "Octorber",
        value: "October",
    },
];

/// First and last year of the date dimension.
pub const YEARS: (i32, i32) = (1992, 1998);

/// c_city / s_city: the nation's name cut or space-padded to 9 characters, then a digit.
pub fn city_name(nation: &str, digit: u32) -> String {
    let prefix: String = nation.chars().take(9).collect();
    format!("{prefix:<9}{digit}")
}

/// p_mfgr `MFGR#m`, p_category `MFGR#mc`, p_brand1 `MFGR#mcb` (m, c in 1..=5, b in 1..=40).
pub fn brand_name(m: u32, c: u32, b: u32) -> String {
    format!("MFGR#{m}{c}{b}")
}

/// d_yearmonth, e.g. `Dec1997`.
pub fn yearmonth_name(year: i32, month: u32) -> String {
    format!("{}{year}", &MONTHS[month as usize - 1][..3])
}

/// All dictionaries of the SSB schema.
#[derive(Debug)]
pub struct Dicts {
    /// c_region, s_region.
    pub region: Dict,
    /// c_nation, s_nation.
    pub nation: Dict,
    /// c_city, s_city (250 values).
    pub city: Dict,
    /// c_mktsegment.
    pub mktsegment: Dict,
    /// p_mfgr (5 values).
    pub mfgr: Dict,
    /// p_category (25 values).
    pub category: Dict,
    /// p_brand1 (1,000 values).
    pub brand1: Dict,
    /// p_color (92 values).
    pub color: Dict,
    /// p_type (150 values).
    pub p_type: Dict,
    /// p_container (40 values).
    pub container: Dict,
    /// lo_orderpriority.
    pub orderpriority: Dict,
    /// lo_shipmode.
    pub shipmode: Dict,
    /// d_dayofweek.
    pub dayofweek: Dict,
    /// d_month.
    pub month: Dict,
    /// d_yearmonth (84 values, `Jan1992` .. `Dec1998`).
    pub yearmonth: Dict,
    /// d_sellingseason.
    pub sellingseason: Dict,
}

impl Dicts {
    fn build() -> Dicts {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (m, c, b) = (1..=5u32, 1..=5u32, 1..=40u32);
        let (t1, t2, t3) = TYPE_WORDS;
        let (k1, k2) = CONTAINER_WORDS;
        Dicts {
            region: Dict::new("region", owned(&REGIONS), &[]),
            nation: Dict::new("nation", NATIONS.iter().map(|n| n.0.into()).collect(), &[]),
            city: Dict::new(
                "city",
                NATIONS
                    .iter()
                    .flat_map(|n| (0..10).map(|d| city_name(n.0, d)))
                    .collect(),
                &[],
            ),
            mktsegment: Dict::new("mktsegment", owned(&SEGMENTS), &[]),
            mfgr: Dict::new(
                "mfgr",
                m.clone().map(|m| format!("MFGR#{m}")).collect(),
                &[],
            ),
            category: Dict::new(
                "category",
                m.clone()
                    .flat_map(|m| c.clone().map(move |c| format!("MFGR#{m}{c}")))
                    .collect(),
                &[],
            ),
            brand1: Dict::new(
                "brand1",
                m.flat_map(|m| {
                    let b = b.clone();
                    c.clone()
                        .flat_map(move |c| b.clone().map(move |b| brand_name(m, c, b)))
                })
                .collect(),
                &[],
            ),
            color: Dict::new("color", owned(&COLORS), &[]),
            p_type: Dict::new(
                "type",
                (0..150)
                    .map(|i| format!("{} {} {}", t1[i / 25], t2[i / 5 % 5], t3[i % 5]))
                    .collect(),
                &[],
            ),
            container: Dict::new(
                "container",
                (0..40)
                    .map(|i| format!("{} {}", k1[i / 8], k2[i % 8]))
                    .collect(),
                &[],
            ),
            orderpriority: Dict::new("orderpriority", owned(&PRIORITIES), &PRIORITY_ALIASES),
            shipmode: Dict::new("shipmode", owned(&SHIP_MODES), &[]),
            dayofweek: Dict::new("dayofweek", owned(&WEEKDAYS), &[]),
            month: Dict::new("month", owned(&MONTHS), &MONTH_ALIASES),
            yearmonth: Dict::new(
                "yearmonth",
                (YEARS.0..=YEARS.1)
                    .flat_map(|y| (1..=12).map(move |m| yearmonth_name(y, m)))
                    .collect(),
                &[],
            ),
            sellingseason: Dict::new("sellingseason", owned(&SEASONS), &[]),
        }
    }

    /// Every dictionary.
    pub fn all(&self) -> [&Dict; 16] {
        [
            &self.region,
            &self.nation,
            &self.city,
            &self.mktsegment,
            &self.mfgr,
            &self.category,
            &self.brand1,
            &self.color,
            &self.p_type,
            &self.container,
            &self.orderpriority,
            &self.shipmode,
            &self.dayofweek,
            &self.month,
            &self.yearmonth,
            &self.sellingseason,
        ]
    }

    /// The dictionary of a string column (by its SSB name, e.g. `s_city`), or `None` for an
    /// integer column.
    pub fn for_column(&self, column: &str) -> Option<&Dict> {
        Some(match column {
            "c_region" | "s_region" => &self.region,
            "c_nation" | "s_nation" => &self.nation,
            "c_city" | "s_city" => &self.city,
            "c_mktsegment" => &self.mktsegment,
            "p_mfgr" => &self.mfgr,
            "p_category" => &self.category,
            "p_brand1" => &self.brand1,
            "p_color" => &self.color,
            "p_type" => &self.p_type,
            "p_container" => &self.container,
            "lo_orderpriority" => &self.orderpriority,
            "lo_shipmode" => &self.shipmode,
            "d_dayofweek" => &self.dayofweek,
            "d_month" => &self.month,
            "d_yearmonth" => &self.yearmonth,
            "d_sellingseason" => &self.sellingseason,
            _ => return None,
        })
    }
}

/// The dictionaries (built once).
pub fn dicts() -> &'static Dicts {
    static DICTS: OnceLock<Dicts> = OnceLock::new();
    DICTS.get_or_init(Dicts::build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_have_the_specified_sizes() {
        let d = dicts();
        let sizes: Vec<(&str, usize)> = d.all().iter().map(|d| (d.name(), d.len())).collect();
        assert_eq!(
            sizes,
            [
                ("region", 5),
                ("nation", 25),
                ("city", 250),
                ("mktsegment", 5),
                ("mfgr", 5),
                ("category", 25),
                ("brand1", 1000),
                ("color", 92),
                ("type", 150),
                ("container", 40),
                ("orderpriority", 5),
                ("shipmode", 7),
                ("dayofweek", 7),
                ("month", 12),
                ("yearmonth", 84),
                ("sellingseason", 5),
            ]
        );
    }

    #[test]
    fn codes_follow_string_order_so_ranges_are_contiguous() {
        let d = dicts();
        for dict in d.all() {
            assert!(
                dict.values().windows(2).all(|w| w[0] < w[1]),
                "{}",
                dict.name()
            );
        }
        // p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228' is 8 consecutive codes.
        let (lo, hi) = (d.brand1.known("MFGR#2221"), d.brand1.known("MFGR#2228"));
        assert_eq!(hi - lo, 7);
        let between: Vec<&str> = (lo..=hi).map(|c| d.brand1.get(c).unwrap()).collect();
        assert!(
            between
                .iter()
                .all(|b| b.starts_with("MFGR#222") && b.len() == 9)
        );
        assert_eq!(d.city.get(d.city.known("UNITED KI1")), Some("UNITED KI1"));
        assert_eq!(d.city.code("PERU     0"), Some(d.city.known("PERU     0")));
        assert_eq!(city_name("MOZAMBIQUE", 3), "MOZAMBIQU3");
        assert_eq!(
            d.orderpriority.code("4-NOT SPECI"),
            d.orderpriority.code("4-NOT SPECIFIED")
        );
        assert_eq!(d.region.get(5), None);
        assert_eq!(d.region.get(-1), None);
    }

    #[test]
    fn dbgen_spellings_resolve_to_the_specifications_codes() {
        let d = dicts();
        let august = d.month.known("August");
        assert_eq!(d.month.resolve("August"), Some((august, None)));
        assert_eq!(d.month.resolve("Augest"), Some((august, Some(0))));
        assert_eq!(
            d.month.resolve("Octorber"),
            Some((d.month.known("October"), Some(1)))
        );
        assert_eq!(d.month.resolve("Octob"), None);
        assert_eq!(d.month.aliases(), MONTH_ALIASES);
        assert_eq!(
            d.orderpriority.resolve("4-NOT SPECI"),
            Some((d.orderpriority.known("4-NOT SPECIFIED"), Some(0)))
        );
        // Aliases add no values: the codes and sizes are the specification's.
        assert_eq!(d.month.len(), 12);
        assert_eq!(
            d.month
                .values()
                .iter()
                .filter(|v| v.starts_with("Aug"))
                .count(),
            1
        );
        let with_aliases: Vec<&str> = d
            .all()
            .iter()
            .filter(|d| !d.aliases().is_empty())
            .map(|d| d.name())
            .collect();
        assert_eq!(with_aliases, ["orderpriority", "month"]);
    }
}
