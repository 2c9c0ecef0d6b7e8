//! Selection: `SELECT y FROM R WHERE p(y)` (and `WHERE px(x) AND py(y)`), in one pass.
use tessera_kernels::ops::select::{self as k, Select2Args, SelectArgs};
use tessera_kernels::predicate::{self, Bounds, CmpOp};
use tessera_kernels::spec::{KernelShape, KernelSpec};

use super::check_same_len;
use crate::error::{Error, Result};
use crate::runtime::{DeviceColumn, DeviceItem, EpochScratch, Gpu, Scratch, tile_grid};

/// A comparison of each item with constants; see [`CmpOp`] for the operators and
/// [`tessera_kernels::predicate`] for NaN semantics (ordered comparisons with NaN are false).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Predicate<T> {
    /// The comparison.
    pub op: CmpOp,
    /// First constant.
    pub a: T,
    /// Second constant (upper bound of `Between`; unused otherwise).
    pub b: T,
}

impl<T: Copy + Default + PartialOrd> Predicate<T> {
    fn new(op: CmpOp, a: T) -> Self {
        Predicate {
            op,
            a,
            b: T::default(),
        }
    }
    /// `x < v`
    pub fn lt(v: T) -> Self {
        Self::new(CmpOp::Lt, v)
    }
    /// `x <= v`
    pub fn le(v: T) -> Self {
        Self::new(CmpOp::Le, v)
    }
    /// `x > v`
    pub fn gt(v: T) -> Self {
        Self::new(CmpOp::Gt, v)
    }
    /// `x >= v`
    pub fn ge(v: T) -> Self {
        Self::new(CmpOp::Ge, v)
    }
    /// `x == v`
    pub fn eq(v: T) -> Self {
        Self::new(CmpOp::Eq, v)
    }
    /// `x != v`
    pub fn ne(v: T) -> Self {
        Self::new(CmpOp::Ne, v)
    }
    /// `lo <= x && x <= hi`
    pub fn between(lo: T, hi: T) -> Self {
        Predicate {
            op: CmpOp::Between,
            a: lo,
            b: hi,
        }
    }
    /// Evaluates the predicate (the CPU implementations use this; the kernels the same code or
    /// its closed-range form, equal for every item).
    pub fn eval(&self, x: T) -> bool {
        predicate::eval(self.op.code(), x, self.a, self.b)
    }
}

impl<T: Bounds> Predicate<T> {
    /// The selection kernels' arguments: the comparison as a closed range, see
    /// [`predicate::range`] (equal to [`Predicate::eval`] for every item, NaN included).
    fn range(&self) -> (u32, T, T) {
        predicate::range(self.op, self.a, self.b)
    }
}

/// How the selection kernel orders and writes its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectVariant {
    /// Input order, compaction with a branch per item (the thesis' "If").
    Ordered,
    /// Input order, branch-free compaction (the thesis' "Pred").
    Predicated,
    /// Tiles in any order (one atomic per tile, Crystal's original); items within a tile keep
    /// their order.
    Unordered,
}

/// Item types with selection kernels: `i32`, `u32`, `f32`, `i64`, `u64`, `f64`. Sealed through
/// [`DeviceItem`]: other types cannot be selected.
pub trait SelectItem: DeviceItem + Bounds {
    /// The kernel for `variant`.
    #[doc(hidden)]
    fn spec(variant: SelectVariant) -> KernelSpec<SelectArgs<Self>>;
}

macro_rules! select_item {
    ($($t:ty: $o:ident, $p:ident, $u:ident;)*) => {$(
        impl SelectItem for $t {
            fn spec(variant: SelectVariant) -> KernelSpec<SelectArgs<$t>> {
                match variant {
                    SelectVariant::Ordered => k::$o,
                    SelectVariant::Predicated => k::$p,
                    SelectVariant::Unordered => k::$u,
                }
            }
        }
    )*};
}
select_item! {
    i32: SELECT_I32, SELECT_PRED_I32, SELECT_UNORDERED_I32;
    u32: SELECT_U32, SELECT_PRED_U32, SELECT_UNORDERED_U32;
    f32: SELECT_F32, SELECT_PRED_F32, SELECT_UNORDERED_F32;
    i64: SELECT_I64, SELECT_PRED_I64, SELECT_UNORDERED_I64;
    u64: SELECT_U64, SELECT_PRED_U64, SELECT_UNORDERED_U64;
    f64: SELECT_F64, SELECT_PRED_F64, SELECT_UNORDERED_F64;
}

/// Item types with two-column selection kernels.
pub trait Select2Item: DeviceItem {
    /// The kernel.
    #[doc(hidden)]
    const SPEC: KernelSpec<Select2Args<Self>>;
}
impl Select2Item for i32 {
    const SPEC: KernelSpec<Select2Args<i32>> = k::SELECT2_I32;
}
impl Select2Item for f32 {
    const SPEC: KernelSpec<Select2Args<f32>> = k::SELECT2_F32;
}

/// Output and kernel state of a selection, reusable across calls of the same or smaller size
/// (so that repeated selections allocate nothing, and ordered ones clear no state).
pub struct Selection<T: DeviceItem> {
    out: DeviceColumn<T>,
    state: EpochScratch,
}

impl<T: DeviceItem> Selection<T> {
    /// Buffers for inputs of up to `capacity` items.
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self> {
        let mut out = gpu.zeros::<T>(capacity)?;
        out.set_len(0);
        Ok(Selection {
            out,
            state: EpochScratch::default(),
        })
    }

    /// Checks the size, prepares the state and returns the launch's look-back epoch. The count
    /// word is zeroed for `cursor` kernels (unordered: they count with an atomic) and for empty
    /// inputs (no kernel runs to write it); ordered kernels' last tile writes it.
    fn prepare(&mut self, gpu: &Gpu, n: usize, spec: &KernelShape, cursor: bool) -> Result<u32> {
        if n > self.out.capacity() {
            return Err(Error::invalid(format!(
                "selection buffers hold {} items, input has {n}",
                self.out.capacity()
            )));
        }
        self.out.set_len(0);
        let words = k::state_words(spec.tiles(n as u64)) as usize;
        let header = if cursor || n == 0 {
            k::STATE_HEADER as usize
        } else {
            0
        };
        self.state.next(gpu, words, header)
    }

    /// Queues `SELECT y FROM input WHERE pred(y)`; [`Selection::finish`] waits for it.
    pub fn launch(
        &mut self,
        gpu: &Gpu,
        input: &DeviceColumn<T>,
        pred: Predicate<T>,
        variant: SelectVariant,
    ) -> Result<()>
    where
        T: SelectItem,
    {
        self.launch_spec(
            gpu,
            input,
            pred,
            T::spec(variant),
            variant == SelectVariant::Unordered,
        )
    }

    /// [`Selection::launch`] with an explicit one-column selection kernel of `T` (such as the
    /// tile-configuration sweep's); `unordered` for kernels that count with an atomic.
    #[doc(hidden)]
    pub fn launch_spec(
        &mut self,
        gpu: &Gpu,
        input: &DeviceColumn<T>,
        pred: Predicate<T>,
        spec: KernelSpec<SelectArgs<T>>,
        unordered: bool,
    ) -> Result<()>
    where
        T: Bounds,
    {
        let n = input.len();
        let epoch = self.prepare(gpu, n, &spec, unordered)?;
        if n == 0 {
            return Ok(());
        }
        let (n32, (neg, lo, hi)) = (n as u32, pred.range());
        let cfg = tile_grid(&spec, n, 0)?;
        let out = &mut self.out.buf;
        let args = (
            input,
            &n32,
            &neg,
            &lo,
            &hi,
            out,
            self.state.words_mut()?,
            &epoch,
        );
        // SAFETY: one block per tile of the `n` inputs; `prepare` checked that the output holds
        // `n` items and sized the state for these tiles at this epoch.
        unsafe { gpu.launch(&spec, cfg, args) }
    }

    /// Queues `SELECT y FROM x, y WHERE px(x) AND py(y)` (columns of equal length).
    pub fn launch2(
        &mut self,
        gpu: &Gpu,
        x: &DeviceColumn<T>,
        px: Predicate<T>,
        y: &DeviceColumn<T>,
        py: Predicate<T>,
    ) -> Result<()>
    where
        T: Select2Item,
    {
        check_same_len("select_where2", "y", y.len(), x.len())?;
        let n = x.len();
        let epoch = self.prepare(gpu, n, &T::SPEC, false)?;
        if n == 0 {
            return Ok(());
        }
        let (n32, opx, opy) = (n as u32, px.op.code(), py.op.code());
        let cfg = tile_grid(&T::SPEC, n, 0)?;
        let (out, state) = (&mut self.out.buf, self.state.words_mut()?);
        let args = (
            x, &opx, &px.a, &px.b, y, &opy, &py.a, &py.b, &n32, out, state, &epoch,
        );
        // SAFETY: as in `launch_spec`, over the `n` items of both columns.
        unsafe { gpu.launch(&T::SPEC, cfg, args) }
    }

    /// Waits for the queued selection and returns the number of selected items.
    pub fn finish(&mut self, gpu: &Gpu) -> Result<usize> {
        let count = Scratch::count(self.state.last(), gpu)?;
        self.out.set_len(count);
        Ok(count)
    }

    /// Makes the next launch that reuses this state take look-back epoch `epoch + 1`, so tests
    /// can reach the wrap-around at [`super::SELECT_MAX_EPOCH`].
    #[doc(hidden)]
    pub fn set_epoch(&mut self, epoch: u32) {
        self.state.set_epoch(epoch);
    }

    /// The selected items of the last finished selection.
    pub fn output(&self) -> &DeviceColumn<T> {
        &self.out
    }

    /// Takes the output column (its length is the count of the last finished selection).
    pub fn into_output(self) -> DeviceColumn<T> {
        self.out
    }
}

/// `SELECT y FROM input WHERE pred(y)`, in input order.
pub fn select<T: SelectItem>(
    gpu: &Gpu,
    input: &DeviceColumn<T>,
    pred: Predicate<T>,
) -> Result<DeviceColumn<T>> {
    select_with(gpu, input, pred, SelectVariant::Ordered)
}

/// [`select`] with a chosen kernel variant.
pub fn select_with<T: SelectItem>(
    gpu: &Gpu,
    input: &DeviceColumn<T>,
    pred: Predicate<T>,
    variant: SelectVariant,
) -> Result<DeviceColumn<T>> {
    let mut s = Selection::new(gpu, input.len())?;
    s.launch(gpu, input, pred, variant)?;
    s.finish(gpu)?;
    Ok(s.into_output())
}

/// `SELECT y FROM R WHERE px(x) AND py(y)`, in input order; `y` is read only where `px(x)`.
pub fn select_where2<T: Select2Item>(
    gpu: &Gpu,
    x: &DeviceColumn<T>,
    px: Predicate<T>,
    y: &DeviceColumn<T>,
    py: Predicate<T>,
) -> Result<DeviceColumn<T>> {
    let mut s = Selection::new(gpu, x.len())?;
    s.launch2(gpu, x, px, y, py)?;
    s.finish(gpu)?;
    Ok(s.into_output())
}
