//! Calendar arithmetic for SSB's dates (`yyyymmdd` keys) and the attributes of the date
//! dimension, computed as dbgen's `mk_date` does.
use super::dict::{MONTHS, WEEKDAYS};

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i32, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    ((yoe + era * 400 + i64::from(m <= 2)) as i32, m, d)
}

/// Whether `y` is a leap year.
pub fn is_leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Days in month `m` of year `y`.
pub fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `yyyymmdd` of a civil date.
pub fn datekey(y: i32, m: u32, d: u32) -> i32 {
    y * 10_000 + m as i32 * 100 + d as i32
}

/// The civil date of a `yyyymmdd` key, if it is a valid date.
pub fn split_datekey(key: i32) -> Option<(i32, u32, u32)> {
    let (y, m, d) = (key / 10_000, (key / 100 % 100) as u32, (key % 100) as u32);
    ((1..=9999).contains(&y) && (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m))
        .then_some((y, m, d))
}

/// The day number of the first day of the date dimension, 1992-01-01.
pub fn first_day() -> i64 {
    days_from_civil(1992, 1, 1)
}

/// Rows of the date dimension: 1992-01-01 .. 1998-12-30, as the reference dbgen writes
/// (2,556 rows; dbgen stops one day short of 1998-12-31, and no lineorder date reaches it).
pub const DATE_ROWS: usize = 2556;

/// Order dates are uniform over 1992-01-01 ..= 1998-08-02 (dbgen's `O_ODATE_MAX`, the end
/// date minus 151 days).
pub fn order_days() -> u32 {
    (days_from_civil(1998, 8, 2) - first_day() + 1) as u32
}

/// The attributes of one row of the date dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DateAttrs {
    /// `yyyymmdd`.
    pub datekey: i32,
    /// Year.
    pub year: i32,
    /// Month 1..=12.
    pub month: u32,
    /// Day of month 1..=31.
    pub day: u32,
    /// 1 = Sunday .. 7 = Saturday.
    pub daynuminweek: u32,
    /// Day of year, 1-based.
    pub daynuminyear: u32,
    /// dbgen's week: `daynuminyear / 7 + 1` (1..=53).
    pub weeknuminyear: u32,
    /// Index into [`super::dict::SEASONS`].
    pub season: usize,
    /// Saturday.
    pub lastdayinweek: bool,
    /// Last day of its month.
    pub lastdayinmonth: bool,
    /// One of dbgen's ten holidays.
    pub holiday: bool,
    /// Monday .. Friday.
    pub weekday: bool,
}

impl DateAttrs {
    /// The attributes of day number `z` (days since 1970-01-01).
    pub fn of_day(z: i64) -> DateAttrs {
        let (year, month, day) = civil_from_days(z);
        // 1970-01-01 was a Thursday (tm_wday 4, Sunday = 0).
        let wday = (z + 4).rem_euclid(7) as u32;
        let daynuminyear = (z - days_from_civil(year, 1, 1) + 1) as u32;
        // dbgen's seasons, first match wins: Christmas Nov-Dec, Summer May-Aug, Winter
        // Jan-Mar, Spring Apr, Fall Sep-Oct.
        let season = match month {
            11 | 12 => 0,
            5..=8 => 1,
            1..=3 => 2,
            4 => 3,
            _ => 4,
        };
        const HOLIDAYS: [(u32, u32); 10] = [
            (12, 24),
            (1, 1),
            (2, 20),
            (4, 20),
            (5, 20),
            (7, 20),
            (8, 20),
            (9, 20),
            (10, 20),
            (11, 20),
        ];
        DateAttrs {
            datekey: datekey(year, month, day),
            year,
            month,
            day,
            daynuminweek: wday + 1,
            daynuminyear,
            weeknuminyear: daynuminyear / 7 + 1,
            season,
            lastdayinweek: wday == 6,
            lastdayinmonth: day == days_in_month(year, month),
            holiday: HOLIDAYS.contains(&(month, day)),
            weekday: (1..=5).contains(&wday),
        }
    }

    /// d_dayofweek.
    pub fn weekday_name(&self) -> &'static str {
        WEEKDAYS[self.daynuminweek as usize - 1]
    }

    /// d_month.
    pub fn month_name(&self) -> &'static str {
        MONTHS[self.month as usize - 1]
    }

    /// d_date, e.g. `January 1, 1992`.
    pub fn long_name(&self) -> String {
        format!("{} {}, {}", self.month_name(), self.day, self.year)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_and_known_days() {
        for z in first_day() - 10..first_day() + 3000 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        let a = DateAttrs::of_day(first_day());
        assert_eq!(
            (a.datekey, a.weekday_name(), a.daynuminweek),
            (19920101, "Wednesday", 4)
        );
        assert_eq!(a.long_name(), "January 1, 1992");
        let last = DateAttrs::of_day(first_day() + DATE_ROWS as i64 - 1);
        assert_eq!(last.datekey, 19981230);
        assert_eq!(order_days(), 2406);
        // q1.3's week 6 of 1994 is days 35..=41: February 4 .. 10.
        let feb4 = DateAttrs::of_day(days_from_civil(1994, 2, 4));
        let feb3 = DateAttrs::of_day(days_from_civil(1994, 2, 3));
        assert_eq!((feb4.weeknuminyear, feb3.weeknuminyear), (6, 5));
        assert_eq!(
            DateAttrs::of_day(days_from_civil(1996, 12, 31)).weeknuminyear,
            53
        );
        assert_eq!(split_datekey(19960229), Some((1996, 2, 29)));
        assert_eq!(split_datekey(19970229), None);
        assert_eq!(split_datekey(19971301), None);
    }
}
