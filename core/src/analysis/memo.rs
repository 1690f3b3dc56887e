//! Values derived from a whole snapshot by the layers above the analysis (the query engine's
//! indexes), built once on first use and dropped with the snapshot.
//!
//! The slots are keyed by the derived value's type, so the analysis never names the types
//! built on it: a layer above owns its type and so its slot.

use crate::sync;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

type Slot = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// One snapshot's derived values, one per type.
#[derive(Default)]
pub(crate) struct Memo {
    slots: RwLock<HashMap<TypeId, Slot>>,
}

impl Memo {
    /// The value of type `T`, built by `build` the first time it is asked for. Two threads
    /// asking at once build it once; building one type never waits for another's build (the
    /// map is locked only to find or add the slot).
    pub(crate) fn get_or_init<T: Any + Send + Sync>(&self, build: impl FnOnce() -> T) -> Arc<T> {
        let slot = self.slot(TypeId::of::<T>());
        let value = slot.get_or_init(|| Arc::new(build()) as Arc<dyn Any + Send + Sync>).clone();
        // The slot of `TypeId::of::<T>()` only ever holds a `T`.
        value.downcast::<T>().unwrap_or_else(|_| unreachable!("a memo slot holds its own type"))
    }

    /// The value of type `T` if it has been built, without building it.
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let value = sync::read(&self.slots).get(&TypeId::of::<T>())?.get()?.clone();
        value.downcast::<T>().ok()
    }

    fn slot(&self, ty: TypeId) -> Slot {
        if let Some(slot) = sync::read(&self.slots).get(&ty) {
            return slot.clone();
        }
        sync::write(&self.slots).entry(ty).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn each_type_is_built_once_and_kept_apart() {
        let memo = Memo::default();
        let builds = AtomicUsize::new(0);
        let number = || {
            builds.fetch_add(1, Ordering::SeqCst);
            7u32
        };
        assert_eq!(*memo.get_or_init(number), 7);
        assert_eq!(*memo.get_or_init(number), 7);
        assert_eq!(*memo.get_or_init(|| String::from("text")), "text");
        assert_eq!(*memo.get_or_init(|| 8u32), 7, "a built value is kept");
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(memo.get::<u32>().as_deref(), Some(&7));
        assert_eq!(memo.get::<u64>(), None, "get never builds");
        assert_eq!(memo.get::<u64>(), None);
    }
}
