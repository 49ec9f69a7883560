"""Classroom mode: live sessions a class follows, kept in a store that every server process
shares. ``live`` holds the rules (who may do what, the limits, the friendly messages) over one of
two backends, ``sqlite_store`` (the default) and ``redis_store``, each a ``backend.Backend``,
opened by URL in ``store`` and swept on a timer by ``sweeper``; ``watch`` tells waiting students when their class moves; ``state`` is where the teacher is and
the checks on it, ``codes`` the join codes and teacher keys, ``catalog`` the exercise boxes and
slips an answer may name, ``checkin`` the before-and-after quiz questions, ``export`` the
teacher's CSV. No streamlit here; ``tfviz.ui.live`` and its ``live_*`` siblings put it on the
pages."""
