" Drives real Vim + coc.nvim through a plan session, as a user would, and writes what it
" saw as JSON (tests/e2e/test_vim_coc.py reads it). Vim has no headless RPC: this runs in
" Vim itself, on a timer, one step at a time; each step returns 1 when it is done.
"
" The user stays in hello.py while the plan streams (the server shows PLAN.md without taking
" focus), then goes to PLAN.md's window, writes a review note and rejects with it through
" coc's default code-action menu; the revision streams; the user types one line and approves
" through the same menu; the Do run edits hello.py and ticks the plan's checklist; the user
" saves everything with `:wa` (what coc says to do after a workspace edit) and `:checktime`s.
" PLAN.md's buffer text is recorded with a wall-clock time on every change.

let s:params = json_decode(join(readfile($PLAN_LSP_E2E_PARAMS), "\n"))
let s:result = {'ok': v:false, 'steps': [], 'buffer_events': [], 'focus_lost': [],
      \ 'vim': v:version . '.' . string(get(v:, 'versionlong', 0) % 10000)}
let s:step = 0
let s:step_started = reltime()
let s:busy = 0
let s:plan_buf = -1
let s:last_plan_text = v:null
let s:prompt_answer = v:null
let s:menus = []

function! s:now() abort
  return reltimefloat(reltime())
endfunction

" Wall-clock seconds as text: json_encode() keeps only six significant digits of a Float.
function! s:stamp() abort
  return printf('%.6f', reltimefloat(reltime()))
endfunction

" What `:w` writes for a buffer: its lines, each ending in a line break (fixeol).
function! s:text(buf) abort
  let lines = getbufline(a:buf, 1, '$')
  if lines == [''] && getbufinfo(a:buf)[0].linecount <= 1 && !getbufvar(a:buf, '&modified')
    return join(readfile(bufname(a:buf), 'b'), "\n")
  endif
  let eol = getbufvar(a:buf, '&eol') || getbufvar(a:buf, '&fixeol')
  return join(lines, "\n") . (eol ? "\n" : '')
endfunction

" hello.py as the user would see it: its buffer, or the file when no buffer holds it (the
" user left it for PLAN.md; Vim unloaded it, and opening it again reads the file).
function! s:hello_text() abort
  let hello = bufnr(s:params.hello_path)
  return hello > 0 && bufloaded(hello) ? s:text(hello) : s:disk(s:params.hello_path)
endfunction

function! s:disk(path) abort
  return filereadable(a:path) ? join(readfile(a:path, 'b'), "\n") : v:null
endfunction

function! s:record_plan(...) abort
  if s:plan_buf <= 0 || !bufloaded(s:plan_buf)
    return
  endif
  let text = s:text(s:plan_buf)
  if text isnot# s:last_plan_text
    let s:last_plan_text = text
    call add(s:result.buffer_events, [s:stamp(), text])
  endif
endfunction

function! s:on_plan_change(bufnr, start, end, added, changes) abort
  call s:record_plan()
endfunction

function! s:state() abort
  return CocRequest('plan-lsp', 'planLsp/state', {})
endfunction

function! s:mark(name) abort
  call add(s:result.steps, a:name)
endfunction

" -- steps ---------------------------------------------------------------------------------

function! s:WaitForServer() abort
  if !get(g:, 'coc_service_initialized', 0)
    return 0
  endif
  let services = CocAction('services')
  let ours = filter(copy(services), 'v:val.id ==# "languageserver.plan-lsp"')
  if empty(ours) || ours[0].state !=# 'running'
    return 0
  endif
  if s:params.plan_open_before
    " The user opened the (empty) PLAN.md before asking: the plan streams into the
    " buffer they are in.
    execute 'edit ' . fnameescape(s:params.plan_path)
  endif
  let s:result.user_win = win_getid()
  let s:result.user_buffer = expand('%:t')
  call s:mark('server running')
  return 1
endfunction

function! s:Prompt() abort
  call CocRequestAsync('plan-lsp', 'planLsp/prompt', {'text': s:params.prompt},
        \ function('s:on_prompt'))
  call s:mark('prompted')
  return 1
endfunction

function! s:on_prompt(err, res) abort
  let s:prompt_answer = empty(a:err) ? a:res : {'error': a:err}
endfunction

function! s:watch_plan() abort
  if s:plan_buf <= 0
    let nr = bufnr(s:params.plan_path)
    if nr > 0 && bufloaded(nr)
      let s:plan_buf = nr
      call listener_add(function('s:on_plan_change'), nr)
      call s:record_plan()
    endif
  endif
  " The user is in hello.py's window the whole time: the server must not take focus.
  if win_getid() != s:result.user_win
    call add(s:result.focus_lost, [s:stamp(), expand('%:p')])
  endif
endfunction

function! s:WaitForPlan() abort
  call s:watch_plan()
  if s:prompt_answer is v:null
    return 0
  endif
  let s:result.prompt_run = s:prompt_answer
  let s:result.plan_loaded = s:plan_buf > 0
  let s:result.plan_windows = s:plan_buf > 0 ? len(win_findbuf(s:plan_buf)) : 0
  let s:result.plan_v1 = s:plan_buf > 0 ? s:text(s:plan_buf) : v:null
  let s:result.current_after_stream = expand('%:t')
  let s:result.state_after_prompt = s:state()
  call s:mark('planned')
  return 1
endfunction

" The user goes to PLAN.md's window (entering it is where Vim checks the file's timestamp).
function! s:GoToPlan() abort
  let wins = win_findbuf(s:plan_buf)
  if empty(wins)
    execute 'tab sbuffer ' . s:plan_buf
  else
    call win_gotoid(wins[0])
  endif
  call s:mark('in PLAN.md')
  return 1
endfunction

function! s:WriteFeedback() abort
  call feedkeys("Go" . s:params.feedback_line . "\<Esc>", 'xt')
  call s:mark('review note')
  return 1
endfunction

" coc's default code-action menu (<Plug>(coc-codeaction-cursor)): pick `title` by number.
function! s:open_menu(title) abort
  let s:menu_title = a:title
  let s:menu_actions = map(CocAction('codeActions', 'cursor'), 'v:val.title')
  call CocActionAsync('codeAction', 'cursor')
  return 1
endfunction

function! s:pick_from_menu() abort
  " The menu reads keys once coc's prompt loop runs; a digit before that is a count.
  if !coc#prompt#activated()
    return 0
  endif
  for winid in coc#float#get_float_win_list()
    let lines = getbufline(winbufnr(winid), 1, '$')
    if match(lines, '\V' . escape(s:menu_title, '\')) >= 0
      call add(s:menus, {'title': s:menu_title, 'lines': lines, 'actions': s:menu_actions})
      let index = index(s:menu_actions, s:menu_title)
      if index < 0 || index > 8
        throw 'no menu number for ' . s:menu_title . ' in ' . string(s:menu_actions)
      endif
      call feedkeys(string(index + 1), 't')
      return 1
    endif
  endfor
  return 0
endfunction

function! s:OpenRejectMenu() abort
  return s:open_menu(s:params.reject_title)
endfunction

function! s:PickReject() abort
  if s:pick_from_menu()
    let s:reject_sent = s:now()
    call s:mark('rejected')
    return 1
  endif
  return 0
endfunction

function! s:WaitForRevision() abort
  call s:record_plan()
  let state = s:state()
  if type(state) != v:t_dict
    return 0
  endif
  if state.running || state.planStatus !=# 'submitted'
    let s:revising = 1
    return 0
  endif
  " Submitted and idle: the revision's run is over once it was seen running, or once the
  " buffer shows the revised plan.
  if !get(s:, 'revising', 0) && s:text(s:plan_buf) !=# s:params.plan_v2
    return 0
  endif
  let s:result.plan_v2 = s:text(s:plan_buf)
  let s:result.state_after_reject = state
  call s:mark('revised')
  return 1
endfunction

function! s:TypeUserLine() abort
  call feedkeys("Go" . s:params.user_line . "\<Esc>", 'xt')
  let s:result.plan_at_approval = s:text(s:plan_buf)
  call s:mark('user line')
  return 1
endfunction

function! s:OpenApproveMenu() abort
  return s:open_menu(s:params.approve_title)
endfunction

function! s:PickApprove() abort
  if s:pick_from_menu()
    call s:mark('approved')
    return 1
  endif
  return 0
endfunction

function! s:WaitForDo() abort
  call s:record_plan()
  let state = s:state()
  if type(state) != v:t_dict || state.running || state.planStatus !=# 'approved'
        \ || get(state, 'outcome', '') ==# ''
    return 0
  endif
  let hello = bufnr(s:params.hello_path)
  let s:result.state_after_do = state
  let s:result.hello_buffer = s:hello_text()
  let s:result.hello_loaded = hello > 0 && bufloaded(hello)
  let s:result.hello_modified = getbufvar(hello, '&modified')
  let s:result.hello_disk_before_save = s:disk(s:params.hello_path)
  let s:result.plan_after_do = s:text(s:plan_buf)
  let s:result.plan_modified = getbufvar(s:plan_buf, '&modified')
  let s:result.plan_disk_before_save = s:disk(s:params.plan_path)
  call s:mark('done')
  return 1
endfunction

" What coc says after a workspace edit: "Use ':wa' to save changes". Typed, so a question
" Vim asks ("changed since reading it") would wait on the screen.
function! s:SaveAll() abort
  call feedkeys(":wa\<CR>", 't')
  call s:mark(':wa')
  return 1
endfunction

function! s:WaitForSaved() abort
  let hello = bufnr(s:params.hello_path)
  if getbufvar(hello, '&modified') || getbufvar(s:plan_buf, '&modified')
    return 0
  endif
  call feedkeys(":checktime\<CR>", 't')
  call s:mark('saved')
  return 1
endfunction

" What the terminal shows now, row by row.
function! s:screen() abort
  redraw
  let rows = []
  for row in range(1, &lines)
    call add(rows, join(map(range(1, &columns), 'screenstring(row, v:val)'), ''))
  endfor
  return rows
endfunction

function! s:Finish() abort
  let s:result.final_screen = s:screen()
  let hello = bufnr(s:params.hello_path)
  let s:result.plan_final = s:text(s:plan_buf)
  let s:result.plan_disk = s:disk(s:params.plan_path)
  let s:result.hello_final = s:hello_text()
  let s:result.hello_final_modified = getbufvar(hello, '&modified')
  let s:result.plan_final_modified = getbufvar(s:plan_buf, '&modified')
  let s:result.hello_disk = s:disk(s:params.hello_path)
  let s:result.state_final = s:state()
  let s:result.menus = s:menus
  let s:result.messages = split(execute('messages'), "\n")
  let s:result.ok = v:true
  return 1
endfunction

let s:Steps = [function('s:WaitForServer'), function('s:Prompt'), function('s:WaitForPlan'),
      \ function('s:GoToPlan'), function('s:WriteFeedback'), function('s:OpenRejectMenu'),
      \ function('s:PickReject'), function('s:WaitForRevision'), function('s:TypeUserLine'),
      \ function('s:OpenApproveMenu'), function('s:PickApprove'), function('s:WaitForDo'),
      \ function('s:SaveAll'), function('s:WaitForSaved'), function('s:Finish')]

function! s:write_result() abort
  call writefile([json_encode(s:result)], s:params.result_path)
endfunction

function! s:tick(timer) abort
  if s:busy
    return
  endif
  let s:busy = 1
  try
    if s:step < len(s:Steps) && s:Steps[s:step]()
      let s:step += 1
      let s:step_started = reltime()
    endif
    if s:step >= len(s:Steps)
      call timer_stop(a:timer)
      call s:write_result()
      qall!
    elseif reltimefloat(reltime(s:step_started)) > s:params.step_timeout_s
      throw 'timed out in step ' . string(s:Steps[s:step])
    endif
  catch
    call timer_stop(a:timer)
    let s:result.error = v:exception . ' at ' . v:throwpoint
    let s:result.messages = split(execute('messages'), "\n")
    let s:result.menus = s:menus
    call s:write_result()
    qall!
  finally
    let s:busy = 0
  endtry
endfunction

call timer_start(30, function('s:tick'), {'repeat': -1})
