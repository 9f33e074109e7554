" Drives real Vim + coc.nvim through a Do run and a revert from a step's lens, as a user would,
" and writes what it saw as JSON (tests/e2e/test_vim_steps.py reads it). Like driver.vim it
" runs in Vim itself, on a timer, one step at a time; each step returns 1 when it is done.
"
" The user is in hello.py and asks for a plan; the plan opens in its own tab page; the user goes
" there and approves it from coc's code-action menu. The Do run edits hello.py (its buffer, which
" the user never saved) and runs `cat hello.py`. Then the user runs `:checktime` (what Vim does
" by itself on focus and shell commands): whatever Vim says is recorded (v:warningmsg, which
" W11/W12 set before they ask). In PLAN.md the user puts the cursor on step 1 and opens coc's
" code-action menu (coc's defaults show no code lenses; the step's lens commands are code
" actions on its line), picking "Revert to before this step"; hello.py's buffer and file go
" back, and `:checktime` again.

let s:params = json_decode(join(readfile($PLAN_LSP_E2E_PARAMS), "\n"))
let s:result = {'ok': v:false, 'steps': [], 'menus': [], 'warnings': []}
let s:step = 0
let s:step_started = reltime()
let s:busy = 0
let s:plan_buf = -1
let s:prompt_answer = v:null

function! s:text(buf) abort
  let eol = getbufvar(a:buf, '&eol') || getbufvar(a:buf, '&fixeol')
  return join(getbufline(a:buf, 1, '$'), "\n") . (eol ? "\n" : '')
endfunction

function! s:disk(path) abort
  return filereadable(a:path) ? join(readfile(a:path, 'b'), "\n") : v:null
endfunction

function! s:hello() abort
  return bufnr(s:params.hello_path)
endfunction

function! s:state() abort
  return CocRequest('plan-lsp', 'planLsp/state', {})
endfunction

function! s:mark(name) abort
  call add(s:result.steps, a:name)
endfunction

" -- what the user does ----------------------------------------------------------------------

function! s:WaitForServer() abort
  if !get(g:, 'coc_service_initialized', 0)
    return 0
  endif
  let ours = filter(CocAction('services'), 'v:val.id ==# "languageserver.plan-lsp"')
  if empty(ours) || ours[0].state !=# 'running'
    return 0
  endif
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

function! s:WaitForPlan() abort
  let nr = bufnr(s:params.plan_path)
  if s:prompt_answer is v:null || nr <= 0 || !bufloaded(nr)
    return 0
  endif
  let s:plan_buf = nr
  let s:result.prompt_run = s:prompt_answer
  call s:mark('planned')
  return 1
endfunction

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

" coc's menu (code actions, code lenses): pick the entry whose line holds `s:menu_title`, by
" the number coc shows before it.
function! s:pick_from_menu() abort
  " The menu reads keys once coc's prompt loop runs; a digit before that is a count.
  if !coc#prompt#activated()
    return 0
  endif
  for winid in coc#float#get_float_win_list()
    let lines = getbufline(winbufnr(winid), 1, '$')
    let at = match(lines, '\V' . escape(s:menu_title, '\'))
    if at >= 0
      call add(s:result.menus, {'title': s:menu_title, 'lines': lines})
      let number = matchstr(lines[at], '\d\+\ze\.')
      if number ==# ''
        throw 'no number for ' . s:menu_title . ' in ' . string(lines)
      endif
      call feedkeys(number, 't')
      return 1
    endif
  endfor
  return 0
endfunction

function! s:OpenApproveMenu() abort
  let s:menu_title = s:params.approve_title
  call CocActionAsync('codeAction', 'cursor')
  return 1
endfunction

function! s:PickApprove() abort
  if s:pick_from_menu()
    call s:mark('approved')
    return 1
  endif
  return 0
endfunction

function! s:WaitForDo() abort
  let state = s:state()
  if type(state) != v:t_dict || state.running || state.planStatus !=# 'approved'
        \ || get(state, 'outcome', '') ==# ''
    return 0
  endif
  let s:result.state_after_do = state
  let s:result.hello_buffer_after_do = s:text(s:hello())
  let s:result.hello_modified_after_do = getbufvar(s:hello(), '&modified')
  let s:result.hello_disk_after_do = s:disk(s:params.hello_path)
  call s:mark('done')
  return 1
endfunction

" `:checktime`, typed: a question Vim asks waits on the screen; its warning is recorded.
function! s:check_time(name) abort
  let v:warningmsg = ''
  let s:checking = a:name
  call feedkeys(":checktime\<CR>", 't')
  return 1
endfunction

function! s:checked() abort
  call add(s:result.warnings, [s:checking, v:warningmsg])
  let s:result[s:checking . '_modified'] = getbufvar(s:hello(), '&modified')
  call s:mark(s:checking)
  return 1
endfunction

function! s:CheckTimeAfterDo() abort
  return s:check_time('checktime after do')
endfunction

function! s:CursorOnStep() abort
  let line = match(getbufline(s:plan_buf, 1, '$'), '^1\. ') + 1
  if line <= 0
    throw 'no step 1 in ' . string(getbufline(s:plan_buf, 1, '$'))
  endif
  call cursor(line, 1)
  let s:lens_line = line
  return 1
endfunction

function! s:RunStepAction() abort
  let s:menu_title = s:params.revert_title
  call CocActionAsync('codeAction', 'cursor')
  return 1
endfunction

function! s:PickRevert() abort
  if s:pick_from_menu()
    call s:mark('revert picked')
    return 1
  endif
  return 0
endfunction

" Until hello.py's buffer holds the original text, saved (within 10 s: then as it is).
function! s:WaitForRevert() abort
  let waited = reltimefloat(reltime(s:step_started))
  if s:text(s:hello()) !=# s:params.hello_before
        \ || (getbufvar(s:hello(), '&modified') && waited < 10)
    return 0
  endif
  let s:result.hello_buffer_reverted = s:text(s:hello())
  let s:result.hello_disk_reverted = s:disk(s:params.hello_path)
  let s:result.hello_modified_reverted = getbufvar(s:hello(), '&modified')
  call s:mark('reverted')
  return 1
endfunction

" The plan's first line no longer says done: the server's lenses there, and its code actions
" offer "Run the rest".
function! s:WaitForTopLens() abort
  let uri = s:state().planUri
  let lenses = CocRequest('plan-lsp', 'textDocument/codeLens', {'textDocument': {'uri': uri}})
  let s:result.top_lenses = map(filter(lenses, 'v:val.range.start.line == 0'),
        \ 'v:val.command.title')
  let actions = CocRequest('plan-lsp', 'textDocument/codeAction', {'textDocument': {'uri': uri},
        \ 'range': {'start': {'line': 0, 'character': 0}, 'end': {'line': 0, 'character': 0}},
        \ 'context': {'diagnostics': []}})
  let s:result.top_actions = map(copy(actions), 'v:val.title')
  return match(s:result.top_lenses, 'partly') >= 0
endfunction

function! s:CheckTimeAfterRevert() abort
  return s:check_time('checktime after revert')
endfunction

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
  let s:result.steps_after_revert = CocRequest('plan-lsp', 'planLsp/steps', {})
  let s:result.hello_buffer_final = s:text(s:hello())
  let s:result.hello_disk_final = s:disk(s:params.hello_path)
  let s:result.plan_modified_final = getbufvar(s:plan_buf, '&modified')
  let s:result.plan_buffer_final = s:text(s:plan_buf)
  let s:result.messages = split(execute('messages'), "\n")
  let s:result.ok = v:true
  return 1
endfunction

let s:Steps = [function('s:WaitForServer'), function('s:Prompt'), function('s:WaitForPlan'),
      \ function('s:GoToPlan'), function('s:OpenApproveMenu'), function('s:PickApprove'),
      \ function('s:WaitForDo'), function('s:CheckTimeAfterDo'), function('s:checked'),
      \ function('s:GoToPlan'), function('s:CursorOnStep'),
      \ function('s:RunStepAction'), function('s:PickRevert'), function('s:WaitForRevert'),
      \ function('s:WaitForTopLens'), function('s:CheckTimeAfterRevert'), function('s:checked'),
      \ function('s:Finish')]

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
    call s:write_result()
    qall!
  finally
    let s:busy = 0
  endtry
endfunction

call timer_start(30, function('s:tick'), {'repeat': -1})
